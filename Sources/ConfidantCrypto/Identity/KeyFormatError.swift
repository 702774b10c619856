/// Errors reading keys and identities from outside the process.
public enum KeyFormatError: Error, Equatable, CustomStringConvertible {
    case invalidPercentEncoding
    case invalidBase64
    case invalidPEM(String)
    case wrongLength(expected: Int, actual: Int)
    case invalidPoint
    case invalidScalar
    case unsupportedVersion(UInt8)
    case badIdentitySignature

    public var description: String {
        switch self {
        case .invalidPercentEncoding:
            return "the key string has a malformed percent escape (expected %XX with hex digits)"
        case .invalidBase64: return "the key string is not valid base64"
        case .invalidPEM(let why): return "not a PEM block Confidant can read: \(why)"
        case .wrongLength(let expected, let actual): return "the key has \(actual) bytes, expected \(expected)"
        case .invalidPoint: return "the bytes are not a valid public key (not a point on the curve)"
        case .invalidScalar: return "the bytes are not a valid private key"
        case .unsupportedVersion(let v):
            return "identity format version \(v) is not supported by this version of Confidant"
        case .badIdentitySignature:
            return
                "the identity's signature does not verify: its keys were altered or it was not made by its signing key"
        }
    }
}
