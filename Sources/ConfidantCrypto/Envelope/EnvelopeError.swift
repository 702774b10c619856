/// Why an envelope could not be sealed or opened.
public enum EnvelopeError: Error, Equatable, CustomStringConvertible {
    case truncated
    case unknownVersion(UInt8)
    /// A known envelope version, handed to the reader of the other one (a v2 session message to
    /// the v1 parser, say).
    case otherVersion(found: UInt8, reader: UInt8)
    case unknownSuite(UInt8)
    case malformed(String)
    case notForThisRecipient(expected: DeviceAddress, actual: DeviceAddress)
    case senderMismatch(header: DeviceAddress, identityDevice: String)
    case tampered
    case badSignature
    case signatureRequired(EnvelopeSuite)
    case messageTooLarge(Int)

    /// The error for an envelope of `found` handed to the reader of version `reader`: another
    /// version this library reads (each has its own reader), or one it does not know.
    static func version(_ found: UInt8, reader: UInt8) -> EnvelopeError {
        (1...3).contains(found) ? .otherVersion(found: found, reader: reader) : .unknownVersion(found)
    }

    public var description: String {
        switch self {
        case .truncated: return "the envelope is truncated"
        case .unknownVersion(let v):
            return "envelope version \(v) is newer than this Confidant, which reads versions 1 to 3"
        case .otherVersion(let found, let reader):
            let kind =
                switch found {
                case 1: "a one-shot envelope, docs/PROTOCOL.md §3"
                case 2: "a session message, docs/PROTOCOL.md §9"
                default: "a group message, docs/PROTOCOL.md §10.4, sent in a shared send frame"
                }
            return "this is a version \(found) envelope (\(kind)); this reader takes version \(reader) only"
        case .unknownSuite(let s): return "envelope suite 0x\(String(s, radix: 16)) is unknown to this Confidant"
        case .malformed(let why): return "the envelope is malformed: \(why)"
        case .notForThisRecipient(let expected, let actual):
            return "the envelope is addressed to \(actual), not to this device (\(expected))"
        case .senderMismatch(let header, let device):
            return "the envelope claims to come from \(header), but the sender identity given is device \(device)"
        case .tampered: return "the envelope failed authentication: it was altered, or sealed with other keys"
        case .badSignature: return "the sender signature does not verify"
        case .signatureRequired(let suite):
            return "suite \(suite) requires a sender signature, and this envelope has none"
        case .messageTooLarge(let n): return "the message is \(n) bytes, more than an envelope can carry"
        }
    }
}
