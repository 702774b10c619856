/// Why a session could not be started, or a v2 envelope sealed or opened.
public enum SessionError: Error, Equatable, CustomStringConvertible {
    /// A prekey's signature does not verify with the device's identity.
    case badPrekeySignature(String)
    /// The bundle belongs to another device than the identity it is used with.
    case bundleMismatch
    /// A session start names a prekey this device does not hold (used up, rotated away, or never issued).
    case unknownPrekey(String)
    /// The message was already opened (its key is gone: this is what forward secrecy means).
    case duplicate
    /// The message claims more than ``RatchetSession/maximumSkip`` messages were skipped.
    case tooManySkipped(Int)
    /// There is no session to seal with, or none of the sessions opens the envelope.
    case noSession
    /// Authentication failed: the envelope was altered, or sealed in a session this device does not have.
    case tampered
    /// The bytes are not a valid session, session record or prekey store.
    case malformed(String)
    /// A key failed to parse or an underlying primitive failed.
    case invalidKey(String)

    public var description: String {
        switch self {
        case .badPrekeySignature(let which):
            return "the \(which) prekey's signature does not verify with the device's identity key"
        case .bundleMismatch: return "the prekey bundle is for another device than the identity given"
        case .unknownPrekey(let which):
            return "the session start uses \(which), which this device no longer holds (already used or rotated away)"
        case .duplicate: return "this message was already received (its key has been erased)"
        case .tooManySkipped(let n):
            return "the message says \(n) earlier messages were skipped, more than a session keeps keys for"
        case .noSession: return "there is no session with this device that opens the message"
        case .tampered:
            return "the message failed authentication: it was altered, or sealed in a session this device does not have"
        case .malformed(let why): return "malformed session data: \(why)"
        case .invalidKey(let why): return "invalid key: \(why)"
        }
    }
}
