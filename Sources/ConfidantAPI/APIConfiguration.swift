import Foundation
import OpenAPIRuntime

/// The runtime settings both ends of the API use: dates as ISO 8601 with milliseconds.
public enum APIConfiguration {
    public static let `default` = Configuration(dateTranscoder: MillisecondDateTranscoder())
}

/// ISO 8601 / RFC 3339 dates with milliseconds (`2026-11-21T20:40:29.123Z`), through
/// `Date.ISO8601FormatStyle`. The runtime's own transcoder goes through `ISO8601DateFormatter`,
/// which on Linux builds a new ICU formatter for every date — a tenth of the relay's CPU time
/// under load, by profile.
public struct MillisecondDateTranscoder: DateTranscoder {
    private static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let wholeSeconds = Date.ISO8601FormatStyle()

    public init() {}

    /// To the nearest millisecond (the style itself truncates): a time then reads the same
    /// whether it comes from memory or from a database, which may hand it back a hair lower.
    public func encode(_ date: Date) throws -> String { Self.style.format(date.addingTimeInterval(0.0005)) }

    public func decode(_ text: String) throws -> Date {
        if let date = try? Self.style.parse(text) { return date }
        return try Self.wholeSeconds.parse(text)
    }
}

/// JSON for the WebSocket stream's frames (`StreamFrame`, `StreamAcknowledgement`), with the same
/// date format as the HTTP API.
public enum StreamCoding {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        let transcoder = MillisecondDateTranscoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(try transcoder.encode(date))
        }
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        let transcoder = MillisecondDateTranscoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            try transcoder.decode(decoder.singleValueContainer().decode(String.self))
        }
        return decoder
    }
}
