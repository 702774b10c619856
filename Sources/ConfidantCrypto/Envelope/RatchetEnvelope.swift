import Foundation

/// An envelope of format version 2: one message of a Double Ratchet session.
///
/// ```
/// u8 version=2 | u8 flags (0x01: carries a session start) | 16 sender user | 16 sender device |
/// 16 recipient user | 16 recipient device | 16 message id | u64 timestamp (ms)        90 bytes
/// [session start, 1,164 bytes, if flag 0x01]                                          see SessionStart
/// 32 sender's ratchet key (X25519) | u32 previous sending chain length | u32 message number
/// u32 ciphertext length | AES-256-GCM ciphertext ‖ 16-byte tag of the Padmé-padded message
/// ```
/// The AEAD's associated data is the session's 32-byte identity binding followed by every byte
/// before the ciphertext length. See docs/PROTOCOL.md §9.
public struct RatchetEnvelope: Sendable, Hashable {
    /// The format version byte of a v2 envelope.
    public static let version: UInt8 = 2
    static let startFlag: UInt8 = 0x01
    static let addressingCount = 90

    /// The sending device.
    public let sender: DeviceAddress
    /// The device the envelope is sealed for.
    public let recipient: DeviceAddress
    /// The message this envelope is one copy of.
    public let messageID: UUID
    /// The sender's timestamp, milliseconds since 1970-01-01T00:00:00Z.
    public let timestampMilliseconds: UInt64
    /// The session start, carried until the initiator hears back from the responder.
    public let start: SessionStart?
    /// The sender's current ratchet public key (X25519, 32 bytes).
    public let ratchetKey: Data
    /// How many messages the sender sent in its previous sending chain.
    public let previousChainLength: UInt32
    /// This message's number in the sender's current sending chain.
    public let messageNumber: UInt32
    /// AES-256-GCM ciphertext of the Padmé-padded message, the 16-byte tag at its end.
    public let ciphertext: Data

    init(
        sender: DeviceAddress, recipient: DeviceAddress, messageID: UUID, timestampMilliseconds: UInt64,
        start: SessionStart?,
        ratchetKey: Data, previousChainLength: UInt32, messageNumber: UInt32, ciphertext: Data
    ) {
        self.sender = sender
        self.recipient = recipient
        self.messageID = messageID
        self.timestampMilliseconds = timestampMilliseconds
        self.start = start
        self.ratchetKey = ratchetKey
        self.previousChainLength = previousChainLength
        self.messageNumber = messageNumber
        self.ciphertext = ciphertext
    }

    /// The sender's timestamp as a date.
    public var timestamp: Date { Date(timeIntervalSince1970: Double(timestampMilliseconds) / 1000) }

    /// Everything before the ciphertext length: authenticated, not encrypted.
    var authenticatedPrefix: [UInt8] {
        var out: [UInt8] = [Self.version, start == nil ? 0 : Self.startFlag]
        out.reserveCapacity(
            Self.addressingCount + (start == nil ? 0 : SessionStart.byteCount) + 40 + 4 + ciphertext.count)
        out.appendAddressing(
            sender: sender, recipient: recipient, messageID: messageID, timestampMilliseconds: timestampMilliseconds)
        start?.write(to: &out)
        out += ratchetKey
        out.appendBigEndian(previousChainLength)
        out.appendBigEndian(messageNumber)
        return out
    }

    /// The wire bytes.
    public var serialized: Data {
        var out = authenticatedPrefix
        out.appendBigEndian(UInt32(ciphertext.count))
        out += ciphertext
        return Data(out)
    }

    /// Parses a v2 envelope without opening it.
    /// - Throws: ``EnvelopeError`` — truncated, another version, unknown flags, trailing bytes.
    public init(serialized bytes: some DataProtocol) throws(EnvelopeError) {
        var reader = ByteReader(bytes)
        guard let version = try? reader.readUInt8() else { throw EnvelopeError.truncated }
        guard version == Self.version else {
            throw EnvelopeError.version(version, reader: Self.version)
        }
        let flags: UInt8
        do throws(TruncatedBytes) {
            flags = try reader.readUInt8()
            let addressing = try reader.readAddressing()
            sender = addressing.sender
            recipient = addressing.recipient
            messageID = addressing.messageID
            timestampMilliseconds = addressing.timestampMilliseconds
            start = flags & Self.startFlag != 0 ? try SessionStart(reading: &reader) : nil
            ratchetKey = try reader.readData(32)
            previousChainLength = try reader.readUInt32()
            messageNumber = try reader.readUInt32()
            ciphertext = try reader.readData(Int(reader.readUInt32()))
        } catch {
            throw EnvelopeError.truncated
        }
        guard flags & ~Self.startFlag == 0 else {
            throw EnvelopeError.malformed("unknown flags 0x\(String(flags, radix: 16))")
        }
        guard reader.isAtEnd else {
            throw EnvelopeError.malformed("\(reader.remaining) unexpected bytes after the envelope")
        }
        guard ciphertext.count >= 16 else { throw EnvelopeError.malformed("the ciphertext is shorter than its tag") }
    }
}
