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

    /// Lowercase hex in groups of four digits (two bytes), separated by spaces. Written digit by
    /// digit: the session store keys sessions by this text, once per message.
    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 5 / 2)
        for (index, byte) in bytes.enumerated() {
            if index > 0, index.isMultiple(of: 2) { text.append(UInt8(ascii: " ")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
