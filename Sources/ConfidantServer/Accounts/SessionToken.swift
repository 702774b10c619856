import Crypto
import Foundation

/// A 256-bit random bearer token, shown to the client once; the database keeps only its SHA-256.
struct SessionToken: Sendable {
    let text: String

    static func generate() -> SessionToken {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return SessionToken(text: Data(bytes).base64URLEncoded)
    }

    /// What is stored and looked up.
    static func hash(_ text: String) -> Data { Data(SHA256.hash(data: Data(text.utf8))) }
    var hash: Data { Self.hash(text) }

    /// The credential of an `Authorization: Bearer …` header (the scheme in any case); nil for
    /// any other header or none.
    static func bearer(_ header: String?) -> Substring? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1]
    }
}

extension Data {
    var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
