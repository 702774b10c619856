import Foundation

/// A group message as every member device receives it (envelope v3, docs/PROTOCOL.md §10.4): a
/// clear header saying who sent it and which message it is, then one ``SenderKeyMessage`` sealed
/// once for every member device. The relay stores it once for all of its recipients.
///
/// ```
/// u8 version = 3 | u8 flags = 0 | 16 sender user | 16 sender device | 16 message id
/// u64 timestamp (ms since 1970, sender's clock)                                  58 bytes
/// sender key message (§10.4)
/// ```
/// The header is routing only; it is authenticated because the sealed plaintext starts with the
/// same 58 bytes (`open` refuses a message whose do not match), and the sender because its chain
/// came to this device over their pairwise session.
public struct GroupEnvelope: Sendable, Hashable {
    /// The envelope version a group message has.
    public static let version: UInt8 = 3
    /// The clear header's length, which the sealed plaintext repeats.
    public static let headerCount = 2 + 16 + 16 + 16 + 8
    /// The most payload bytes one group envelope carries.
    public static let maximumPayloadBytes = SenderKeyMessage.maximumPlaintextBytes - headerCount

    /// The sending device (checked against the chain that opens the message).
    public let sender: DeviceAddress
    /// The message id, the same for every member device.
    public let messageID: UUID
    /// When it was sent, milliseconds since 1970, by the sender's clock.
    public let timestampMilliseconds: UInt64
    /// The sealed message.
    public let message: SenderKeyMessage

    /// ``timestampMilliseconds`` as a date.
    public var timestamp: Date { Date(timeIntervalSince1970: Double(timestampMilliseconds) / 1000) }

    /// Seals `payload` with the next key of `chain` (which steps: store it before the envelope
    /// leaves).
    public static func seal(
        _ payload: some DataProtocol, chain: inout SenderKeySendingChain, sender: DeviceAddress, messageID: UUID,
        timestamp: Date
    ) throws(SenderKeyError) -> GroupEnvelope {
        guard payload.count <= maximumPayloadBytes else { throw .tooLarge(payload.count) }
        let milliseconds = UInt64(max(0, (timestamp.timeIntervalSince1970 * 1000).rounded(.down)))
        let header = Self.header(sender: sender, messageID: messageID, timestampMilliseconds: milliseconds)
        let message = try chain.seal(header + Array(payload))
        return GroupEnvelope(
            sender: sender, messageID: messageID, timestampMilliseconds: milliseconds, message: message)
    }

    /// Opens the envelope with the sender's chain as this device holds it (which steps only if
    /// it opens) and answers the payload after the repeated header.
    public func open(with chain: inout SenderKeyReceivingChain) throws(SenderKeyError) -> Data {
        var copy = chain
        let plaintext = try copy.open(message)
        let header = Self.header(sender: sender, messageID: messageID, timestampMilliseconds: timestampMilliseconds)
        guard plaintext.count >= Self.headerCount, plaintext.prefix(Self.headerCount).elementsEqual(header) else {
            throw .tampered
        }
        chain = copy
        return plaintext.dropFirst(Self.headerCount)
    }

    init(sender: DeviceAddress, messageID: UUID, timestampMilliseconds: UInt64, message: SenderKeyMessage) {
        self.sender = sender
        self.messageID = messageID
        self.timestampMilliseconds = timestampMilliseconds
        self.message = message
    }

    static func header(sender: DeviceAddress, messageID: UUID, timestampMilliseconds: UInt64) -> [UInt8] {
        var out: [UInt8] = [version, 0]
        out.reserveCapacity(headerCount)
        out.append(sender.userID)
        out.append(sender.deviceID)
        out.append(messageID)
        out.appendBigEndian(timestampMilliseconds)
        return out
    }

    /// The envelope's bytes, as uploaded once for every member device.
    public var serialized: Data {
        var out = Self.header(sender: sender, messageID: messageID, timestampMilliseconds: timestampMilliseconds)
        out += message.serialized
        return Data(out)
    }

    /// Reads an envelope without opening it: a well-formed header and sender key message.
    public init(serialized data: some DataProtocol) throws(EnvelopeError) {
        var reader = ByteReader(data)
        guard let version = try? reader.readUInt8() else { throw EnvelopeError.truncated }
        guard version == Self.version else {
            throw EnvelopeError.version(version, reader: Self.version)
        }
        let fields: (flags: UInt8, user: UUID, device: UUID, message: UUID, time: UInt64)
        do throws(TruncatedBytes) {
            fields = (
                try reader.readUInt8(), try reader.readUUID(), try reader.readUUID(), try reader.readUUID(),
                try reader.readUInt64()
            )
        } catch {
            throw EnvelopeError.truncated
        }
        guard fields.flags == 0 else { throw EnvelopeError.malformed("unknown group envelope flags") }
        sender = DeviceAddress(userID: fields.user, deviceID: fields.device)
        messageID = fields.message
        timestampMilliseconds = fields.time
        do {
            message = try SenderKeyMessage(serialized: reader.readRest())
        } catch {
            throw EnvelopeError.malformed("\(error)")
        }
    }
}
