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
}

extension Data {
    var base64URLEncoded: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
