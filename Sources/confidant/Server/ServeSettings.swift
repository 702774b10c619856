import ArgumentParser
import Configuration
import Foundation
import Yams

/// `serve --config FILE` (YAML) and `CONFIDANT_*` environment variables: every option of `serve`
/// read from them and turned into the arguments it stands for, ahead of the command line's own.
/// For each option the strongest source alone counts: the command line, then the environment,
/// then the file (so a repeatable option from the command line replaces the file's list).
///
/// The file is read with Yams rather than swift-configuration's `YAMLSnapshot`, which keeps no
/// line numbers and takes unknown keys silently; an operator's typo must be an error naming its
/// line. The environment is read through swift-configuration (`CONFIDANT_METRICS_PORT` for
/// `metrics-port`).
struct ServeSettings {
    /// One long option of `serve`.
    struct Option: Equatable {
        let name: String
        let isFlag: Bool
        let repeats: Bool
    }

    /// Where a setting came from, for errors: `relay.yaml:12`, `CONFIDANT_PORT`.
    typealias Origin = String

    /// The options `serve` takes, as its own help describes them (so none can be missed here).
    static let options: [String: Option] = {
        guard let json = try? JSONSerialization.jsonObject(with: Data(ServeCommand._dumpHelp().utf8)),
            let root = (json as? [String: Any])?["command"] as? [String: Any],
            let arguments = root["arguments"] as? [[String: Any]]
        else { return [:] }
        var options: [String: Option] = [:]
        for argument in arguments {
            let kind = argument["kind"] as? String
            let names = (argument["names"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "long" }
            guard kind == "option" || kind == "flag", let name = names.first?["name"] as? String,
                !notSettings.contains(name)
            else { continue }
            options[name] = Option(
                name: name, isFlag: kind == "flag", repeats: argument["isRepeating"] as? Bool ?? false)
        }
        return options
    }()

    /// Options that say how to read settings, not what they are.
    static let notSettings: Set<String> = ["config", "check-config", "help", "version"]

    /// The largest settings file read.
    static let maximumFileBytes = 1 << 20

    /// `arguments` (after `serve`) with the environment's and the file's settings put before them,
    /// and where each of those came from.
    static func expand(_ arguments: [String], environment: [String: String]) throws -> (
        arguments: [String], origins: [String: Origin]
    ) {
        let given = Set(arguments.compactMap(optionName))
        var origins: [String: Origin] = [:]
        var fromEnvironment: [String] = []
        let reader = ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: environment))
        for option in options.values.sorted(by: { $0.name < $1.name }) where !given.contains(option.name) {
            guard let value = reader.string(forKey: ConfigKey(["confidant", option.name])) else { continue }
            let variable = "CONFIDANT_" + option.name.uppercased().replacingOccurrences(of: "-", with: "_")
            fromEnvironment += try settingArguments(
                for: option, values: option.repeats ? split(value) : [value], at: variable)
            origins[option.name] = variable
        }
        var fromFile: [String] = []
        if let path = configPath(arguments) ?? environment["CONFIDANT_CONFIG"] {
            for (option, values, line) in try read(path)
            where origins[option.name] == nil && !given.contains(option.name) {
                let origin = "\(path):\(line)"
                fromFile += try settingArguments(for: option, values: values, at: origin)
                origins[option.name] = origin
            }
        }
        return (arguments + fromEnvironment + fromFile, origins)
    }

    /// The values the environment and the settings file at `configPath` give the options `names`.
    static func values(of names: Set<String>, configPath: String?, environment: [String: String]) throws
        -> [String: String]
    {
        let given = configPath.map { ["--config", $0] } ?? []
        let expanded = try expand(given, environment: environment).arguments.dropFirst(given.count)
        var values: [String: String] = [:]
        var index = expanded.startIndex
        while index < expanded.endIndex {
            if let name = optionName(expanded[index]), names.contains(name), index + 1 < expanded.endIndex {
                values[name] = expanded[index + 1]
                index += 2
            } else {
                index += 1
            }
        }
        return values
    }

    /// The long option an argument names (`--port 1`, `--port=1`), if any.
    static func optionName(_ argument: String) -> String? {
        guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
        return String(argument.dropFirst(2).prefix { $0 != "=" })
    }

    /// The value of `--config` on the command line.
    private static func configPath(_ arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == "--config", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
        }
        return nil
    }

    private static func split(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The arguments one setting stands for; a flag takes true or false.
    private static func settingArguments(for option: Option, values: [String], at origin: Origin) throws -> [String] {
        if option.isFlag {
            switch values.first?.lowercased() {
            case "true", "yes", "on", "1": return ["--\(option.name)"]
            case "false", "no", "off", "0": return []
            default: throw SettingsError("\(origin): `\(option.name)` is on or off: give true or false")
            }
        }
        guard option.repeats || values.count == 1 else {
            throw SettingsError("\(origin): `\(option.name)` takes one value, not a list")
        }
        return values.flatMap { ["--\(option.name)", $0] }
    }
}

/// A settings file or variable `serve` cannot use, said with where it is.
struct SettingsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ServeSettings {
    /// Where `serve` is among the arguments (`serve …` or `server serve …`).
    static func serveIndex(in arguments: [String]) -> Int? {
        if arguments.first == "serve" { return 0 }
        if arguments.count > 1, arguments[0] == "server", arguments[1] == "serve" { return 1 }
        return nil
    }

    /// `error` with where the option it names was set, when that was the file or the environment.
    static func naming(_ origins: [String: Origin], in error: any Error) -> any Error {
        guard !origins.isEmpty else { return error }
        let message = Confidant.message(for: error)
        let named = origins.filter { name, _ in
            var rest = message[...]
            while let range = rest.range(of: "--\(name)") {
                let next = rest[range.upperBound...].first
                if next.map({ !$0.isLetter && !$0.isNumber && $0 != "-" }) ?? true { return true }
                rest = rest[range.upperBound...]
            }
            return false
        }
        guard let (name, origin) = named.max(by: { $0.key.count < $1.key.count }) else { return error }
        return SettingsError("\(message) (`\(name)` is set at \(origin))")
    }
}
