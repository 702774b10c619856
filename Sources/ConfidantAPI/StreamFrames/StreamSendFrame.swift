import ConfidantCrypto
import Foundation

/// The binary form of a send over `/v1/stream` (docs/PROTOCOL.md §7.2): the envelopes of one
/// message and their lengths, nothing else. The relay reads the sender, the recipient and the
/// message id from each envelope's header anyway, so the JSON form's copies of them, its base64
/// (4/3 of the bytes) and its decoding (a tenth of the relay's time per message) are left out.
///
///     version (1 byte, 1) ‖ count (UInt16 big-endian, 1–256) ‖ count × (length (UInt32 big-endian, ≥ 1) ‖ envelope)
///     version (1 byte, 2) ‖ after (16 bytes) ‖ count ‖ count × (length ‖ envelope)
///
/// Version 2 names the message this one follows (`after`, its id's 16 bytes): the relay stores it
/// only if it holds that message from the same sender, so a client can send several messages
/// without waiting for each receipt and still none overtakes one the relay refused. Nothing may
/// follow the last envelope. A relay announces the versions it takes in its `challenge` frame
/// (`binarySendVersions`); a client sends JSON to one that does not.
public struct StreamSendFrame: Sendable, Hashable {
    /// The version without a predecessor.
    public static let version: UInt8 = 1
    /// The version with one (`after`).
    public static let orderedVersion: UInt8 = 2
    public static let maximumEnvelopes = 256

    public let envelopes: [Data]
    /// The message this one must follow; nil for none (version 1).
    public let after: UUID?

    /// `envelopes` must be 1 to 256, none of them empty.
    public init(envelopes: [Data], after: UUID? = nil) throws(StreamSendFrameError) {
        guard (1...Self.maximumEnvelopes).contains(envelopes.count) else {
            throw .envelopeCount(envelopes.count)
        }
        guard envelopes.allSatisfy({ !$0.isEmpty && $0.count <= UInt32.max }) else { throw .emptyEnvelope }
        self.envelopes = envelopes
        self.after = after
    }

    /// Parses a frame, refusing anything that is not exactly one encoding of it.
    public init(serialized bytes: Data) throws(StreamSendFrameError) {
        try self.init(serialized: Array(bytes))
    }

    /// Parses a frame from an array, reading it in place: the relay copies a frame out of its
    /// socket buffer once, into this array, and each envelope once more, into its own `Data`.
    public init(serialized bytes: [UInt8]) throws(StreamSendFrameError) {
        var reader = ByteReader(bytes, truncated: StreamSendFrameError.truncated)
        let version = try reader.readUInt8()
        switch version {
        case Self.version:
            after = nil
        case Self.orderedVersion:
            after = try reader.readUUID()
        default:
            throw .unsupportedVersion(version)
        }
        let count = Int(try reader.readUInt16())
        guard (1...Self.maximumEnvelopes).contains(count) else { throw .envelopeCount(count) }
        var envelopes: [Data] = []
        envelopes.reserveCapacity(count)
        for _ in 0..<count {
            let length = Int(try reader.readUInt32())
            guard length > 0 else { throw .emptyEnvelope }
            envelopes.append(try reader.readData(length))
        }
        guard reader.isAtEnd else { throw .trailingBytes(reader.remaining) }
        self.envelopes = envelopes
    }

    /// The frame's bytes.
    public func serialized() -> Data {
        var bytes = Data(capacity: 19 + envelopes.reduce(0) { $0 + 4 + $1.count })
        if let after {
            bytes.append(Self.orderedVersion)
            withUnsafeBytes(of: after.uuid) { bytes.append(contentsOf: $0) }
        } else {
            bytes.append(Self.version)
        }
        bytes.appendBigEndian(UInt16(envelopes.count))
        for envelope in envelopes {
            bytes.appendBigEndian(UInt32(envelope.count))
            bytes.append(envelope)
        }
        return bytes
    }
}

/// Why bytes are not a `StreamSendFrame`.
public enum StreamSendFrameError: Error, Hashable, CustomStringConvertible {
    case truncated
    case unsupportedVersion(UInt8)
    case envelopeCount(Int)
    /// A shared frame (`SharedSendFrame`) naming no device or too many.
    case recipientCount(Int)
    case emptyEnvelope
    case trailingBytes(Int)

    public var description: String {
        switch self {
        case .truncated: "The binary send frame ends early."
        case .unsupportedVersion(let version):
            "Binary send frames of version \(version) are not known here (this relay takes versions \(StreamSendFrame.version) to \(SharedSendFrame.version))."
        case .envelopeCount(let count):
            "A binary send frame carries 1 to \(StreamSendFrame.maximumEnvelopes) envelopes, not \(count)."
        case .recipientCount(let count):
            "A shared send frame goes to 1 to \(SharedSendFrame.maximumRecipients) devices, not \(count)."
        case .emptyEnvelope: "An envelope in the binary send frame is empty."
        case .trailingBytes(let count): "\(count) bytes follow the last envelope of the binary send frame."
        }
    }
}
