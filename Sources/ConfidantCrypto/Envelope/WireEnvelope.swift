import Foundation

/// Any envelope read from the wire, by the version in its first byte: v1 (``SealedEnvelope``,
/// one HPKE message) or v2 (``RatchetEnvelope``, one message of a session).
public enum WireEnvelope: Sendable, Hashable {
    case sealed(SealedEnvelope)
    case ratchet(RatchetEnvelope)

    /// Parses either version without opening it.
    public init(serialized bytes: some DataProtocol) throws(EnvelopeError) {
        switch bytes.first {
        case nil: throw EnvelopeError.truncated
        case RatchetEnvelope.version?: self = .ratchet(try RatchetEnvelope(serialized: bytes))
        default: self = .sealed(try SealedEnvelope(serialized: bytes))
        }
    }

    /// The sending device, from the header.
    public var sender: DeviceAddress {
        switch self {
        case .sealed(let envelope): return envelope.header.sender
        case .ratchet(let envelope): return envelope.sender
        }
    }

    /// The device the envelope is sealed for, from the header.
    public var recipient: DeviceAddress {
        switch self {
        case .sealed(let envelope): return envelope.header.recipient
        case .ratchet(let envelope): return envelope.recipient
        }
    }

    /// The message id, from the header.
    public var messageID: UUID {
        switch self {
        case .sealed(let envelope): return envelope.header.messageID
        case .ratchet(let envelope): return envelope.messageID
        }
    }

    /// The sender's timestamp, from the header.
    public var timestamp: Date {
        switch self {
        case .sealed(let envelope): return envelope.header.timestamp
        case .ratchet(let envelope): return envelope.timestamp
        }
    }

    /// 1 or 2.
    public var version: UInt8 {
        switch self {
        case .sealed: return EnvelopeHeader.version
        case .ratchet: return RatchetEnvelope.version
        }
    }
}
