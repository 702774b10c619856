import Foundation
import Logging

/// `serve --log-format json`: one JSON object per line — `time` (ISO 8601, milliseconds),
/// `level`, `label`, `source`, `message` and the metadata (a request's lines carry Vapor's
/// `request-id`), for log shippers. The relay logs no secret: tokens, passwords, codes and
/// envelopes stay out of messages and metadata alike.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable (String) -> Void

    /// A handler for `label` writing each line (with its newline) to `write`; standard error by default.
    public init(
        label: String,
        write: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        var object: [String: Any] = merged.mapValues(Self.json)
        object["time"] = Date().formatted(Self.time)
        object["level"] = event.level.rawValue
        object["label"] = label
        object["source"] = event.source
        object["message"] = event.message.description
        if let error = event.error { object["error"] = "\(error)" }
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        write(String(decoding: data, as: UTF8.self) + "\n")
    }

    private static let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let value): value.description
        case .array(let values): values.map(json)
        case .dictionary(let values): values.mapValues(json)
        }
    }
}
