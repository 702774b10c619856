import Foundation
import Yams

extension ServeSettings {
    /// One setting of a file: the option, its values and the line it is on.
    typealias FileSetting = (option: Option, values: [String], line: Int)

    /// The settings of a YAML file: a mapping of `serve`'s long option names to values; a nested
    /// mapping joins its keys with `-` (`metrics: {port: 9464}` is `metrics-port: 9464`); a list
    /// for a repeatable option. Unknown keys, keys set twice and values of the wrong shape are
    /// errors that name the line.
    static func read(_ path: String) throws -> [FileSetting] {
        let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
        guard let size, let data = FileManager.default.contents(atPath: path) else {
            throw SettingsError("\(path): cannot read the settings file")
        }
        guard size <= maximumFileBytes, let text = String(data: data, encoding: .utf8) else {
            throw SettingsError("\(path): a settings file is UTF-8 text of at most \(maximumFileBytes >> 10) KiB")
        }
        let root: Node?
        do { root = try Yams.compose(yaml: text) } catch {
            throw SettingsError("\(path): not valid YAML: \(error)")
        }
        guard let root else { return [] }
        guard case .mapping(let mapping) = root else {
            throw SettingsError("\(path):\(line(of: root)): the settings are a mapping of option names to values")
        }
        var settings: [FileSetting] = []
        var seen: [String: Int] = [:]
        try collect(mapping, prefix: "", path: path, into: &settings, seen: &seen)
        return settings
    }

    private static func collect(
        _ mapping: Node.Mapping, prefix: String, path: String, into settings: inout [FileSetting],
        seen: inout [String: Int]
    ) throws {
        for (keyNode, value) in mapping {
            let line = line(of: keyNode)
            guard let key = keyNode.scalar?.string, !key.isEmpty else {
                throw SettingsError("\(path):\(line): a key is an option's name, such as port")
            }
            let name = prefix.isEmpty ? key : "\(prefix)-\(key)"
            if case .mapping(let nested) = value {
                try collect(nested, prefix: name, path: path, into: &settings, seen: &seen)
                continue
            }
            guard let option = options[name] else { throw unknown(name, at: "\(path):\(line)") }
            if let earlier = seen[name] {
                throw SettingsError("\(path):\(line): `\(name)` is set already on line \(earlier)")
            }
            seen[name] = line
            switch value {
            case .scalar(let scalar):
                // `port:` or `port: ~` leaves the option unset.
                if value.null != nil { continue }
                settings.append((option, [scalar.string], line))
            case .sequence(let sequence) where option.repeats:
                let values = try sequence.map {
                    guard let item = $0.scalar?.string else {
                        throw SettingsError("\(path):\(ServeSettings.line(of: $0)): each `\(name)` is a single value")
                    }
                    return item
                }
                settings.append((option, values, line))
            default:
                throw SettingsError("\(path):\(line): `\(name)` takes one value, not a list")
            }
        }
    }

    /// The 1-based line a node starts on.
    private static func line(of node: Node) -> Int { node.mark?.line ?? 0 }

    /// An unknown key, with the option it most likely meant.
    static func unknown(_ name: String, at origin: Origin) -> SettingsError {
        let letters = { (text: String) in text.lowercased().filter(\.isLetter) }
        let near = options.keys.filter { letters($0) == letters(name) || $0.hasPrefix(name) }.sorted()
        let hint = near.first.map { " (did you mean `\($0)`?)" } ?? ""
        return SettingsError(
            "\(origin): unknown setting `\(name)`\(hint); the settings are serve's options, listed by `confidant serve --help`"
        )
    }
}
