import ConfidantCrypto
import Foundation

/// The binary form of the relay's receipts on `/v1/stream` (docs/PROTOCOL.md §7.4), for a client
/// that connects with `receipts=binary`: what `{"receipt": MessageReceipt}` frames say, several
/// to a frame, without JSON or a formatted date. The relay answers the sends a group commit
/// stored together in one frame per connection instead of a text frame each.
///
///     kind (1 byte, 2) ‖ count (UInt16, 1–512) ‖ count × receipt
///     receipt = message id (16 bytes) ‖ stored (UInt16) ‖ duplicate (1 byte, 0 or 1)
///               ‖ receivedAt (Int64, milliseconds since 1970 UTC)
///
/// Integers are big-endian, ids are their 16 bytes in RFC 9562 order, and nothing follows the
/// last receipt. The first byte of every binary frame the relay sends says what it is: 1, a
/// delivery frame (`StreamDeliveryFrame`); 2, this.
public struct StreamReceiptFrame: Sendable, Hashable {
    public static let kind: UInt8 = 2
    /// As many as a connection may have sends waiting for their receipt.
    public static let maximumReceipts = 512

    /// One stored (or duplicate) message, as a `MessageReceipt` says it.
    public struct Receipt: Sendable, Hashable {
        public let messageID: UUID
        /// Envelopes stored for it.
        public let stored: UInt16
        public let duplicate: Bool
        /// When the relay first stored it, in whole milliseconds since 1970.
        public let receivedAtMilliseconds: Int64

        public init(messageID: UUID, stored: UInt16, duplicate: Bool, receivedAtMilliseconds: Int64) {
            self.messageID = messageID
            self.stored = stored
            self.duplicate = duplicate
            self.receivedAtMilliseconds = receivedAtMilliseconds
        }

        /// The receipt as the JSON form carries it (the id in lower-case canonical form).
        public var messageReceipt: Components.Schemas.MessageReceipt {
            Components.Schemas.MessageReceipt(
                messageId: messageID.canonicalString, stored: Int(stored), duplicate: duplicate,
                receivedAt: Date(timeIntervalSince1970: Double(receivedAtMilliseconds) / 1000))
        }

        /// Bytes a receipt takes in a frame.
        public static let size = 16 + 2 + 1 + 8
    }

    public let receipts: [Receipt]

    /// `receipts` must be 1 to 512.
    public init(receipts: [Receipt]) throws(StreamReceiptFrameError) {
        guard (1...Self.maximumReceipts).contains(receipts.count) else { throw .receiptCount(receipts.count) }
        self.receipts = receipts
    }

    /// Parses a frame, refusing anything that is not exactly one encoding of one.
    public init(serialized bytes: Data) throws(StreamReceiptFrameError) {
        var reader = ByteReader(bytes, truncated: StreamReceiptFrameError.truncated)
        let kind = try reader.readUInt8()
        guard kind == Self.kind else { throw .notReceipts(kind) }
        let count = Int(try reader.readUInt16())
        guard (1...Self.maximumReceipts).contains(count) else { throw .receiptCount(count) }
        var receipts: [Receipt] = []
        receipts.reserveCapacity(count)
        for _ in 0..<count {
            let messageID = try reader.readUUID()
            let stored = try reader.readUInt16()
            let duplicate = try reader.readUInt8()
            guard duplicate <= 1 else { throw .invalidDuplicateFlag(duplicate) }
            let receivedAt = Int64(bitPattern: try reader.readUInt64())
            receipts.append(
                Receipt(
                    messageID: messageID, stored: stored, duplicate: duplicate == 1, receivedAtMilliseconds: receivedAt)
            )
        }
        guard reader.isAtEnd else { throw .trailingBytes(reader.remaining) }
        try self.init(receipts: receipts)
    }

    /// The frame's bytes.
    public func serialized() -> Data {
        let count = 3 + receipts.count * Receipt.size
        var bytes = Data(count: count)
        bytes.withUnsafeMutableBytes { buffer in
            var writer = BinaryFrameWriter(buffer: buffer)
            writer.write(Self.kind)
            writer.write(UInt16(receipts.count))
            for receipt in receipts {
                writer.write(receipt.messageID)
                writer.write(receipt.stored)
                writer.write(UInt8(receipt.duplicate ? 1 : 0))
                writer.write(UInt64(bitPattern: receipt.receivedAtMilliseconds))
            }
            assert(writer.offset == count, "the frame's size is computed from the same fields")
        }
        return bytes
    }
}

/// Why bytes are not a `StreamReceiptFrame`.
public enum StreamReceiptFrameError: Error, Hashable, CustomStringConvertible {
    case truncated
    case notReceipts(UInt8)
    case receiptCount(Int)
    case invalidDuplicateFlag(UInt8)
    case trailingBytes(Int)

    public var description: String {
        switch self {
        case .truncated: "The binary receipt frame ends early."
        case .notReceipts(let kind):
            "A binary frame of kind \(kind) is not a receipt frame (kind \(StreamReceiptFrame.kind) is)."
        case .receiptCount(let count):
            "A binary receipt frame carries 1 to \(StreamReceiptFrame.maximumReceipts) receipts, not \(count)."
        case .invalidDuplicateFlag(let flag): "A receipt's duplicate flag is \(flag), not 0 or 1."
        case .trailingBytes(let count): "\(count) bytes follow the last receipt of the binary receipt frame."
        }
    }
}
