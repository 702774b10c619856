import ArgumentParser
import Foundation

/// `--profile NAME` (default `default`) under `$CONFIDANT_HOME` or `~/.confidant`, so several
/// users can share one machine.
struct ProfileOptions: ParsableArguments {
    @Option(name: .long, help: "Profile name (a directory under $CONFIDANT_HOME or ~/.confidant).")
    var profile: String = "default"

    var directory: URL {
        get throws {
            guard !profile.isEmpty, !profile.contains("/"), profile != ".", profile != ".." else {
                throw ValidationError("a profile name is a plain name such as 'default' or 'alice'")
            }
            let home =
                ProcessInfo.processInfo.environment["CONFIDANT_HOME"].map { URL(fileURLWithPath: $0) }
                ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".confidant")
            return home.appendingPathComponent(profile)
        }
    }
}

extension ProfileOptions {
    /// A command to suggest, as the user would type it for this profile: `path` (such as
    /// "chat verify"), then `--profile NAME` unless the profile is the default, then `arguments`.
    func suggestion(_ path: String, _ arguments: String...) -> String {
        Self.suggestion(path, profile: profile, arguments)
    }

    /// The same for a profile by name; nil (a command without a profile) names none.
    static func suggestion(_ path: String, profile: String?, _ arguments: [String]) -> String {
        var words = ["confidant", path]
        if let profile, profile != "default" { words += ["--profile", ShellWord.quoted(profile)] }
        words += arguments
        return "`" + words.joined(separator: " ") + "`"
    }

    /// The profile options inside a parsed command (directly or in its option groups), for advice
    /// after an error that names the profile. Nil for a command without a profile.
    static func find(in command: Any) -> ProfileOptions? {
        // ArgumentParser keeps an option group's value inside its property wrapper; Mirror walks
        // through them without this file knowing their layout. A few levels are enough: command,
        // option group, its stored value, a nested group.
        func search(_ value: Any, depth: Int) -> ProfileOptions? {
            if let found = value as? ProfileOptions { return found }
            guard depth > 0 else { return nil }
            for child in Mirror(reflecting: value).children {
                if let found = search(child.value, depth: depth - 1) { return found }
            }
            return nil
        }
        return search(command, depth: 8)
    }
}
