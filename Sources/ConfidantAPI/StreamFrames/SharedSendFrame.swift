import ConfidantCrypto
import Foundation

/// One group message for many devices, uploaded once (docs/PROTOCOL.md §7.2, version 3): the
/// devices it goes to, then one group envelope (v3, §10.4) that each of them gets as it is. The
/// relay stores the envelope once and one mailbox entry per device referring to it. Sent as a
/// binary stream frame or as the body of `POST /v1/messages/shared`.
///
///     version (1 byte, 3) ‖ after (16 bytes, zeros: none) ‖ count (UInt16, 1–4,096)
///     ‖ count × (user id (16) ‖ device id (16)) ‖ length (UInt32, ≥ 1) ‖ envelope
public struct SharedSendFrame: Sendable, Hashable {
    public static let version: UInt8 = 3
    public static let maximumRecipients = 4_096

    public let recipients: [DeviceAddress]
    public let envelope: Data
    /// The message this one must follow, as version 2 frames name it; nil for none.
    public let after: UUID?

    /// `recipients`: 1 to 4,096; `envelope` not empty.
    public init(recipients: [DeviceAddress], envelope: Data, after: UUID? = nil) throws(StreamSendFrameError) {
        guard (1...Self.maximumRecipients).contains(recipients.count) else {
            throw .recipientCount(recipients.count)
        }
        guard !envelope.isEmpty, envelope.count <= UInt32.max else { throw .emptyEnvelope }
        self.recipients = recipients
        self.envelope = envelope
        self.after = after
    }

    /// Parses a frame, refusing anything that is not exactly one encoding of it.
    public init(serialized bytes: [UInt8]) throws(StreamSendFrameError) {
        var reader = ByteReader(bytes, truncated: StreamSendFrameError.truncated)
        let version = try reader.readUInt8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let after = try reader.readUUID()
        let count = Int(try reader.readUInt16())
        guard (1...Self.maximumRecipients).contains(count) else { throw .recipientCount(count) }
        var recipients: [DeviceAddress] = []
        recipients.reserveCapacity(count)
        for _ in 0..<count {
            recipients.append(DeviceAddress(userID: try reader.readUUID(), deviceID: try reader.readUUID()))
        }
        let length = Int(try reader.readUInt32())
        guard length > 0 else { throw .emptyEnvelope }
        envelope = try reader.readData(length)
        guard reader.isAtEnd else { throw .trailingBytes(reader.remaining) }
        self.recipients = recipients
        self.after = after == Self.none ? nil : after
    }

    /// The all-zero id: no predecessor.
    private static let none = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// The frame's bytes.
    public func serialized() -> Data {
        var bytes: [UInt8] = [Self.version]
        bytes.reserveCapacity(1 + 16 + 2 + 32 * recipients.count + 4 + envelope.count)
        bytes.append(after ?? Self.none)
        bytes.appendBigEndian(UInt16(recipients.count))
        for recipient in recipients {
            bytes.append(recipient.userID)
            bytes.append(recipient.deviceID)
        }
        bytes.appendBigEndian(UInt32(envelope.count))
        var data = Data(bytes)
        data.append(envelope)
        return data
    }
}
