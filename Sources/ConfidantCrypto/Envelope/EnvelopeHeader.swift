import Foundation

/// The cleartext header of an envelope: everything a relay needs, authenticated as AAD.
///
/// 91 bytes: `u8 version | u8 suite | u8 flags | 16 sender user | 16 sender device |
/// 16 recipient user | 16 recipient device | 16 message id | u64 timestamp (ms since 1970, UTC)`.
public struct EnvelopeHeader: Sendable, Hashable {
    /// The format version a v1 header starts with.
    public static let version: UInt8 = 1
    /// The header's size in bytes.
    public static let byteCount = 91
    static let signedFlag: UInt8 = 0x01

    /// The cipher suite the envelope is sealed with.
    public let suite: EnvelopeSuite
    /// Whether an Ed25519 sender signature follows the ciphertext.
    public let isSigned: Bool
    /// The sending device.
    public let sender: DeviceAddress
    /// The device the envelope is sealed for.
    public let recipient: DeviceAddress
    /// The message this envelope is one copy of (the same in every recipient's copy).
    public let messageID: UUID
    /// Milliseconds since 1970-01-01T00:00:00Z, as chosen by the sender.
    public let timestampMilliseconds: UInt64

    /// A header with every field given; sealing builds one from its arguments.
    public init(
        suite: EnvelopeSuite, isSigned: Bool, sender: DeviceAddress, recipient: DeviceAddress,
        messageID: UUID, timestampMilliseconds: UInt64
    ) {
        self.suite = suite
        self.isSigned = isSigned
        self.sender = sender
        self.recipient = recipient
        self.messageID = messageID
        self.timestampMilliseconds = timestampMilliseconds
    }

    /// The sender's timestamp as a date.
    public var timestamp: Date { Date(timeIntervalSince1970: Double(timestampMilliseconds) / 1000) }

    var bytes: [UInt8] {
        var out: [UInt8] = [Self.version, suite.rawValue, isSigned ? Self.signedFlag : 0]
        out.reserveCapacity(Self.byteCount)
        out.appendAddressing(
            sender: sender, recipient: recipient, messageID: messageID, timestampMilliseconds: timestampMilliseconds)
        return out
    }

    init(reading reader: inout ByteReader<TruncatedBytes>) throws(EnvelopeError) {
        // Check the version before reading on: a later version may have another layout.
        guard let version = try? reader.readUInt8() else { throw EnvelopeError.truncated }
        guard version == Self.version else {
            throw EnvelopeError.version(version, reader: Self.version)
        }
        let fields: (suite: UInt8, flags: UInt8, addressing: DeviceAddressing)
        do throws(TruncatedBytes) {
            fields = (try reader.readUInt8(), try reader.readUInt8(), try reader.readAddressing())
        } catch {
            throw EnvelopeError.truncated
        }
        guard let suite = EnvelopeSuite(rawValue: fields.suite) else { throw EnvelopeError.unknownSuite(fields.suite) }
        guard fields.flags & ~Self.signedFlag == 0 else {
            throw EnvelopeError.malformed("unknown flags 0x\(String(fields.flags, radix: 16))")
        }
        self.suite = suite
        self.isSigned = fields.flags & Self.signedFlag != 0
        self.sender = fields.addressing.sender
        self.recipient = fields.addressing.recipient
        self.messageID = fields.addressing.messageID
        self.timestampMilliseconds = fields.addressing.timestampMilliseconds
    }
}

/// The addressing fields v1 headers and v2 envelopes share:
/// `16 sender user | 16 sender device | 16 recipient user | 16 recipient device | 16 message id | u64 timestamp (ms)`.
struct DeviceAddressing {
    let sender: DeviceAddress
    let recipient: DeviceAddress
    let messageID: UUID
    let timestampMilliseconds: UInt64
}

extension ByteReader {
    mutating func readAddressing() throws(Failure) -> DeviceAddressing {
        DeviceAddressing(
            sender: DeviceAddress(userID: try readUUID(), deviceID: try readUUID()),
            recipient: DeviceAddress(userID: try readUUID(), deviceID: try readUUID()),
            messageID: try readUUID(), timestampMilliseconds: try readUInt64())
    }
}

extension Array where Element == UInt8 {
    mutating func appendAddressing(
        sender: DeviceAddress, recipient: DeviceAddress, messageID: UUID, timestampMilliseconds: UInt64
    ) {
        append(sender.userID)
        append(sender.deviceID)
        append(recipient.userID)
        append(recipient.deviceID)
        append(messageID)
        appendBigEndian(timestampMilliseconds)
    }
}
