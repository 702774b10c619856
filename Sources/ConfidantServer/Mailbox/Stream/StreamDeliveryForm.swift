import ConfidantAPI
import ConfidantCrypto
import Foundation
import NIOCore

/// The frames a stream's client asked to get its entries in (`/v1/stream?batched=…&deliveries=…`,
/// docs/PROTOCOL.md §7 and §7.3).
enum StreamDeliveryForm: Sendable, Hashable {
    /// `{"entry": …}`, one entry to a text frame (the default).
    case entryFrames
    /// `{"entries": […]}` text frames (`batched=true`).
    case batchedText
    /// Envelopes in binary `StreamDeliveryFrame`s (`deliveries=binary`); other kinds of entries,
    /// which are JSON themselves, in `{"entries": […]}` text frames in their place.
    case binary

    /// A frame to write.
    enum Frame: Sendable {
        case text(String)
        case binary(ByteBuffer)
    }

    /// Binary deliveries whether or not text frames would be batched: a binary frame is a batch.
    init(batched: Bool, binary: Bool) {
        self = binary ? .binary : batched ? .batchedText : .entryFrames
    }

    /// The frames that send `entries`, in cursor order. Binary frames hold up to
    /// `StreamFrameText.maximumBatchEntries` entries and `maximumBatchBytes` of envelopes (one
    /// larger envelope alone), as the batched text frames do.
    func frames(_ entries: [MailboxEntry]) throws -> [Frame] {
        switch self {
        case .entryFrames: return try StreamFrameText.frames(entries, batched: false).map(Frame.text)
        case .batchedText: return try StreamFrameText.frames(entries, batched: true).map(Frame.text)
        case .binary: break
        }
        var frames: [Frame] = []
        var envelopes: [StreamDeliveryFrame.Entry] = []
        var others: [MailboxEntry] = []
        var bytes = 0
        func closeEnvelopes() throws {
            guard !envelopes.isEmpty else { return }
            // One writer of the format for the relay, its clients and the tests; the copy into
            // the buffer is small beside the base64 it replaces.
            frames.append(.binary(ByteBuffer(bytes: try StreamDeliveryFrame(entries: envelopes).serialized())))
            envelopes = []
            bytes = 0
        }
        func closeOthers() throws {
            guard !others.isEmpty else { return }
            frames += try StreamFrameText.frames(others, batched: true).map(Frame.text)
            others = []
        }
        for row in entries {
            guard row.kind.isEnvelope, let messageID = row.messageID else {
                try closeEnvelopes()
                others.append(row)
                continue
            }
            try closeOthers()
            if envelopes.count == StreamFrameText.maximumBatchEntries
                || bytes + row.payload.count > StreamFrameText.maximumBatchBytes
            {
                try closeEnvelopes()
            }
            envelopes.append(
                try StreamDeliveryFrame.Entry(
                    cursor: row.cursor, receivedAtMilliseconds: Self.milliseconds(row.receivedAt), sender: row.sender,
                    messageID: messageID, envelope: row.payload))
            bytes += row.payload.count
        }
        try closeEnvelopes()
        try closeOthers()
        return frames
    }

    /// To the nearest millisecond, as the JSON form writes it (`MillisecondDateTranscoder`).
    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
