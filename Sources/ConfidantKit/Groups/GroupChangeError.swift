/// Why a group change's bytes could not be read, made or trusted.
public enum GroupChangeError: Error, Equatable, CustomStringConvertible {
    /// The bytes are not a group change.
    case malformed(String)
    /// A format version this library does not read.
    case unsupportedVersion(UInt8)
    /// An action this library does not know.
    case unknownAction(UInt8)
    /// The author device's key did not sign the change.
    case badSignature

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed group change: \(why)"
        case .unsupportedVersion(let version): return "group change format version \(version) is not supported"
        case .unknownAction(let action):
            return "the group change has action \(action), which this version does not know; update Confidant"
        case .badSignature: return "the group change's signature does not verify with its author device's key"
        }
    }
}
