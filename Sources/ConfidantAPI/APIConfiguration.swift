import Foundation
import OpenAPIRuntime

/// The runtime settings both ends of the API use: dates as ISO 8601 with milliseconds.
public enum APIConfiguration {
    public static let `default` = Configuration(dateTranscoder: .iso8601WithFractionalSeconds)
}

/// JSON for the WebSocket stream's frames (`StreamFrame`, `StreamAcknowledgement`), with the same
/// date format as the HTTP API.
public enum StreamCoding {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(try ISO8601DateTranscoder.iso8601WithFractionalSeconds.encode(date))
        }
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            return try ISO8601DateTranscoder.iso8601WithFractionalSeconds.decode(text)
        }
        return decoder
    }
}
