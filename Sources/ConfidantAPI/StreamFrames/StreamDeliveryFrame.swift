import ConfidantCrypto
import Foundation
import OpenAPIRuntime

/// The binary form of delivered envelopes on `/v1/stream` (docs/PROTOCOL.md §7.3), for a client
/// that connects with `deliveries=binary`: what an `{"entries": […]}` frame says about envelope
/// entries, without JSON and without base64 (4/3 of the bytes, encoded at the relay and decoded at
/// the client for every message).
///
///     version (1 byte, 1) ‖ count (UInt16, 1–256) ‖ count × entry
///     entry = cursor (UInt64, 1 … 2⁶³ − 1) ‖ receivedAt (Int64, milliseconds since 1970 UTC)
///             ‖ sender user id (16 bytes) ‖ sender device id (16) ‖ message id (16)
///             ‖ length (UInt32, ≥ 1) ‖ envelope (length bytes)
///
/// Integers are big-endian, ids are their 16 bytes in RFC 9562 order, entries come in cursor
/// order, and nothing follows the last one. Other kinds of entries (key changes, prekey notices)
/// stay JSON text frames, in their place in cursor order.
public struct StreamDeliveryFrame: Sendable, Hashable {
    public static let version: UInt8 = 1
    public static let maximumEntries = 256

    /// One delivered envelope, as a `MailboxEntry` of kind `envelope` says it.
    public struct Entry: Sendable, Hashable {
        public let cursor: Int64
        /// When the relay stored it, in whole milliseconds since 1970.
        public let receivedAtMilliseconds: Int64
        public let sender: DeviceAddress
        public let messageID: UUID
        public let envelope: Data

        /// `cursor` ≥ 1 and `envelope` not empty (the frame cannot say otherwise).
        public init(
            cursor: Int64, receivedAtMilliseconds: Int64, sender: DeviceAddress, messageID: UUID, envelope: Data
        ) throws(StreamDeliveryFrameError) {
            guard cursor >= 1 else { throw .invalidCursor }
            guard !envelope.isEmpty, envelope.count <= UInt32.max else { throw .emptyEnvelope }
            self.cursor = cursor
            self.receivedAtMilliseconds = receivedAtMilliseconds
            self.sender = sender
            self.messageID = messageID
            self.envelope = envelope
        }

        /// The entry as the JSON form carries it (ids in lower-case canonical form).
        public var mailboxEntry: Components.Schemas.MailboxEntry {
            Components.Schemas.MailboxEntry(
                cursor: cursor, kind: .envelope, senderUserId: sender.userID.canonicalString,
                senderDeviceId: sender.deviceID.canonicalString, messageId: messageID.canonicalString,
                receivedAt: Date(timeIntervalSince1970: Double(receivedAtMilliseconds) / 1000),
                envelope: Base64EncodedData(envelope))
        }

        /// Bytes the entry takes in a frame besides its envelope.
        public static let overhead = 8 + 8 + 16 * 3 + 4
    }

    public let entries: [Entry]

    /// `entries` must be 1 to 256, in cursor order.
    public init(entries: [Entry]) throws(StreamDeliveryFrameError) {
        guard (1...Self.maximumEntries).contains(entries.count) else { throw .entryCount(entries.count) }
        guard zip(entries, entries.dropFirst()).allSatisfy({ $0.cursor < $1.cursor }) else { throw .cursorOrder }
        self.entries = entries
    }

    /// Parses a frame, refusing anything that is not exactly one encoding of one.
    public init(serialized bytes: Data) throws(StreamDeliveryFrameError) {
        var reader = ByteReader(bytes, truncated: StreamDeliveryFrameError.truncated)
        let version = try reader.readUInt8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let count = Int(try reader.readUInt16())
        guard (1...Self.maximumEntries).contains(count) else { throw .entryCount(count) }
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let cursor = try reader.readUInt64()
            guard (1...UInt64(Int64.max)).contains(cursor) else { throw .invalidCursor }
            let receivedAt = Int64(bitPattern: try reader.readUInt64())
            let sender = DeviceAddress(userID: try reader.readUUID(), deviceID: try reader.readUUID())
            let messageID = try reader.readUUID()
            let length = Int(try reader.readUInt32())
            guard length > 0 else { throw .emptyEnvelope }
            entries.append(
                try Entry(
                    cursor: Int64(cursor), receivedAtMilliseconds: receivedAt, sender: sender, messageID: messageID,
                    envelope: try reader.readData(length)))
        }
        guard reader.isAtEnd else { throw .trailingBytes(reader.remaining) }
        try self.init(entries: entries)
    }

    /// The frame's bytes.
    public func serialized() -> Data {
        // Written in place into a buffer of the exact size, not appended field by field to `Data`:
        // this runs for every delivery.
        let count = 3 + entries.reduce(0) { $0 + Entry.overhead + $1.envelope.count }
        var bytes = Data(count: count)
        bytes.withUnsafeMutableBytes { buffer in
            var writer = BinaryFrameWriter(buffer: buffer)
            writer.write(Self.version)
            writer.write(UInt16(entries.count))
            for entry in entries {
                writer.write(UInt64(entry.cursor))
                writer.write(UInt64(bitPattern: entry.receivedAtMilliseconds))
                writer.write(entry.sender.userID)
                writer.write(entry.sender.deviceID)
                writer.write(entry.messageID)
                writer.write(UInt32(entry.envelope.count))
                writer.write(entry.envelope)
            }
            assert(writer.offset == count, "the frame's size is computed from the same fields")
        }
        return bytes
    }
}

/// Why bytes are not a `StreamDeliveryFrame`.
public enum StreamDeliveryFrameError: Error, Hashable, CustomStringConvertible {
    case truncated
    case unsupportedVersion(UInt8)
    case entryCount(Int)
    case invalidCursor
    case cursorOrder
    case emptyEnvelope
    case trailingBytes(Int)

    public var description: String {
        switch self {
        case .truncated: "The binary delivery frame ends early."
        case .unsupportedVersion(let version):
            "Binary delivery frames of version \(version) are not known here (version \(StreamDeliveryFrame.version) is)."
        case .entryCount(let count):
            "A binary delivery frame carries 1 to \(StreamDeliveryFrame.maximumEntries) entries, not \(count)."
        case .invalidCursor: "A cursor in the binary delivery frame is not between 1 and 2⁶³ − 1."
        case .cursorOrder: "The entries of a binary delivery frame are not in cursor order."
        case .emptyEnvelope: "An envelope in the binary delivery frame is empty."
        case .trailingBytes(let count): "\(count) bytes follow the last entry of the binary delivery frame."
        }
    }
}
