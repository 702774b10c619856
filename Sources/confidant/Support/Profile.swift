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
