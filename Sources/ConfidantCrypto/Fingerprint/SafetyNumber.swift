import Crypto
import Foundation

/// A 60-digit number two people compare to check that they see each other's real keys,
/// computed as Signal's numeric fingerprint (version 0), with our identity signing key and
/// device id as key and stable identifier:
///
/// ```
/// h = SHA-512(0x0000 ‖ signing key ‖ device id); repeat 5200 times: h = SHA-512(h ‖ signing key)
/// half = first 30 bytes of h as six 5-byte big-endian numbers, each mod 100000, 5 digits
/// safety number = the two 30-digit halves, the smaller first
/// ```
/// Both sides get the same number whatever the order of the arguments.
public struct SafetyNumber: Sendable, Hashable, CustomStringConvertible {
    static let iterations = 5200

    /// The 60 digits.
    public let digits: String

    /// Computes the safety number of two identities.
    public init(_ a: PublicIdentity, _ b: PublicIdentity) {
        let halves = [Self.half(for: a), Self.half(for: b)].sorted()
        digits = halves[0] + halves[1]
    }

    static func half(for identity: PublicIdentity) -> String {
        let key = identity.signingKey.rawRepresentation
        var input = Data([0, 0]) + key
        withUnsafeBytes(of: identity.deviceID.uuid) { input.append(contentsOf: $0) }
        var hash = Data(SHA512.hash(data: input))
        for _ in 0..<iterations {
            var hasher = SHA512()
            hasher.update(data: hash)
            hasher.update(data: key)
            hash = Data(hasher.finalize())
        }
        let bytes = Array(hash.prefix(30))
        return stride(from: 0, to: 30, by: 5).map { start in
            let chunk = bytes[start..<start + 5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let value = String(chunk % 100_000)
            return String(repeating: "0", count: 5 - value.count) + value
        }.joined()
    }

    /// The digits in twelve groups of five, as people read them aloud.
    public var grouped: String {
        stride(from: 0, to: 60, by: 5).map { offset -> String in
            let start = digits.index(digits.startIndex, offsetBy: offset)
            return String(digits[start..<digits.index(start, offsetBy: 5)])
        }.joined(separator: " ")
    }

    public var description: String { grouped }
}

/// A short fingerprint of one identity: the first 16 bytes of SHA-256 over the serialized
/// identity, as eight groups of four hex digits ("3f2a 9b1c …").
public struct IdentityFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The 16 bytes of the fingerprint.
    public let bytes: [UInt8]

    /// The fingerprint of `identity`.
    public init(_ identity: PublicIdentity) {
        bytes = Array(SHA256.hash(data: identity.serialized).prefix(16))
    }

    public var description: String {
        let hex = bytes.map { byte in
            let s = String(byte, radix: 16)
            return s.count == 1 ? "0" + s : s
        }.joined()
        return stride(from: 0, to: hex.count, by: 4).map { offset -> String in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return String(hex[start..<hex.index(start, offsetBy: 4)])
        }.joined(separator: " ")
    }
}
