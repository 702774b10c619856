import ConfidantAPI
import ConfidantCrypto
import Foundation
import Synchronization

/// The JSON text of the stream's two most frequent frames — a delivered envelope and a receipt —
/// written directly instead of through `JSONEncoder` and its generic path, for every message
/// relayed. Nothing in them needs escaping: numbers,
/// UUIDs, timestamps and base64. Everything else goes through `JSONEncoder`; the tests decode
/// both kinds of text with `JSONDecoder` and compare them with what `JSONEncoder` writes.
enum StreamFrameText {
    private static let dates = MillisecondDateTranscoder()
    /// The last time written and its text. A group's receipts and entries all carry the group's
    /// time, formatted once.
    private static let lastDate = Mutex<(date: Date, text: String)?>(nil)

    private static func text(of date: Date) throws -> String {
        if let last = lastDate.withLock({ $0 }), last.date == date { return last.text }
        let text = try dates.encode(date)
        lastDate.withLock { $0 = (date, text) }
        return text
    }

    /// The `MailboxEntry` object of an envelope; nil for other kinds (`frames` has `JSONEncoder`
    /// write those).
    static func envelopeObject(_ row: MailboxEntry) throws -> String? {
        guard row.kind.isEnvelope, let messageID = row.messageID else { return nil }
        return
            #"{"cursor":\#(row.cursor),"kind":"envelope","senderUserId":"\#(row.sender.userID.canonicalString)","#
            + #""senderDeviceId":"\#(row.sender.deviceID.canonicalString)","messageId":"\#(messageID.canonicalString)","#
            + #""receivedAt":"\#(try text(of: row.receivedAt))","envelope":"\#(row.payload.base64EncodedString())"}"#
    }

    /// Entries a batched frame carries at most.
    static let maximumBatchEntries = 256
    /// Bytes of envelopes a batched frame carries at most; a larger entry goes alone.
    static let maximumBatchBytes = 256 << 10

    /// The frames that send `entries`, in order: `{"entry": …}` each, or, for a client that
    /// asked for batches (`/v1/stream?batched=true`), `{"entries": [...]}` frames of up to
    /// `maximumBatchEntries` entries and `maximumBatchBytes` of envelopes (one larger entry
    /// alone). A frame costs the relay and the client more than the bytes in it.
    static func frames(_ entries: [MailboxEntry], batched: Bool) throws -> [String] {
        var encoder: JSONEncoder?
        func object(_ row: MailboxEntry) throws -> String {
            if let text = try envelopeObject(row) { return text }
            let json = encoder ?? StreamCoding.encoder()
            encoder = json
            return String(decoding: try json.encode(try row.wire), as: UTF8.self)
        }
        guard batched else { return try entries.map { #"{"entry":"# + (try object($0)) + "}" } }
        var frames: [String] = []
        var batch: [String] = []
        var bytes = 0
        func closeBatch() {
            guard !batch.isEmpty else { return }
            frames.append(#"{"entries":["# + batch.joined(separator: ",") + "]}")
            batch = []
            bytes = 0
        }
        for row in entries {
            if batch.count == maximumBatchEntries || bytes + row.payload.count > maximumBatchBytes { closeBatch() }
            batch.append(try object(row))
            bytes += row.payload.count
        }
        closeBatch()
        return frames
    }

    /// `{"receipt": MessageReceipt}`; nil if the message id (the client's text) is not plainly a UUID.
    static func receipt(_ receipt: Components.Schemas.MessageReceipt) throws -> String? {
        guard
            receipt.messageId.utf8.allSatisfy({
                switch $0 {
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                    UInt8(ascii: "A")...UInt8(ascii: "F"):
                    true
                default: false
                }
            })
        else {
            return nil
        }
        return
            #"{"receipt":{"messageId":"\#(receipt.messageId)","stored":\#(receipt.stored),"duplicate":\#(receipt.duplicate),"#
            + #""receivedAt":"\#(try text(of: receipt.receivedAt))"}}"#
    }
}
