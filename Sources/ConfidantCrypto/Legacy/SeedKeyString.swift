import Crypto
import Foundation

/// The key-string format of the seed application (seed 000, `exportPublicKey` / `importPublicKey`):
/// base64 of a key's raw representation, then percent-encoded with every character except
/// ASCII letters and digits escaped (`+` → `%2B`, `/` → `%2F`, `=` → `%3D`).
///
/// Decoding also accepts plain, unescaped base64, because the seed app stored such strings too.
public enum SeedKeyString {
    /// Encodes raw key bytes the way the seed app did.
    public static func encode<Bytes: DataProtocol>(_ raw: Bytes) -> String {
        percentEncode(Data(raw).base64EncodedString())
    }

    /// Decodes a seed key string into raw bytes.
    /// - Throws: ``KeyFormatError/invalidPercentEncoding`` or ``KeyFormatError/invalidBase64``.
    public static func decode(_ string: String) throws -> Data {
        let base64 = try percentDecode(string.trimmingCharacters(in: .whitespacesAndNewlines))
        guard let raw = Data(base64Encoded: base64) else { throw KeyFormatError.invalidBase64 }
        return raw
    }

    /// Reads a P-256 key-agreement public key written by the seed app (64-byte raw X‖Y).
    public static func p256PublicKey(_ string: String) throws -> P256.KeyAgreement.PublicKey {
        let raw = try decode(string)
        guard raw.count == 64 else { throw KeyFormatError.wrongLength(expected: 64, actual: raw.count) }
        do { return try P256.KeyAgreement.PublicKey(rawRepresentation: raw) } catch {
            throw KeyFormatError.invalidPoint
        }
    }

    /// Reads a P-256 key-agreement private key written by the seed app (32-byte raw scalar).
    public static func p256PrivateKey(_ string: String) throws -> P256.KeyAgreement.PrivateKey {
        let raw = try decode(string)
        guard raw.count == 32 else { throw KeyFormatError.wrongLength(expected: 32, actual: raw.count) }
        do { return try P256.KeyAgreement.PrivateKey(rawRepresentation: raw) } catch {
            throw KeyFormatError.invalidScalar
        }
    }

    /// Percent-encodes everything but ASCII letters and digits, as
    /// `addingPercentEncoding(withAllowedCharacters: .alphanumerics)` does for base64 text.
    /// Written out because Foundation's `.alphanumerics` also admits non-ASCII letters,
    /// which base64 never contains, and we want the exact ASCII rule on every platform.
    static func percentEncode(_ string: String) -> String {
        var out = ""
        out.reserveCapacity(string.utf8.count * 3)
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + hexByte(byte)
            }
        }
        return out
    }

    static func percentDecode(_ string: String) throws -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(string.utf8.count)
        var iterator = string.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    throw KeyFormatError.invalidPercentEncoding
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw KeyFormatError.invalidPercentEncoding
        }
        return decoded
    }

    private static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        return String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0F)])
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
