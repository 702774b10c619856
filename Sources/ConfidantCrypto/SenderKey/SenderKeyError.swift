/// Why a sender key distribution or a group message could not be read, sealed or opened.
public enum SenderKeyError: Error, Equatable, CustomStringConvertible {
    /// The bytes are not a valid distribution, message or stored chain.
    case malformed(String)
    /// A format version this library does not read.
    case unsupportedVersion(UInt8)
    /// The message belongs to another sending chain than the one it was opened with.
    case wrongChain
    /// The chain's signing key did not sign the message: it was forged or altered.
    case badSignature
    /// The signature held but the ciphertext did not authenticate.
    case tampered
    /// The message was opened before (its key is gone), or is older than the chain this device holds.
    case duplicate
    /// The message says more messages were skipped than a chain keeps keys for.
    case tooManySkipped(Int)
    /// The chain has sealed its last message; a new chain must be made and distributed.
    case chainExhausted
    /// The plaintext is larger than a group message carries.
    case tooLarge(Int)

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed sender key data: \(why)"
        case .unsupportedVersion(let version): return "sender key format version \(version) is not supported"
        case .wrongChain: return "the group message belongs to another sender key than the one given"
        case .badSignature: return "the group message's signature does not verify with its sender's key"
        case .tampered: return "the group message failed authentication: it was altered"
        case .duplicate:
            return "this group message was already received, or was sent before this device got the sender's key"
        case .tooManySkipped(let n):
            return "the group message says \(n) earlier messages were skipped, more than a sender key keeps keys for"
        case .chainExhausted: return "this sender key has sealed its last message; a new one is needed"
        case .tooLarge(let n):
            return "a group message carries at most \(SenderKeyMessage.maximumPlaintextBytes) bytes, not \(n)"
        }
    }
}
