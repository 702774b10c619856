import ConfidantAPI
import ConfidantCrypto
import Foundation

/// The JSON text of the stream's two most frequent frames — a delivered envelope and a receipt —
/// written directly instead of through `JSONEncoder`, whose generic path was the largest single
/// cost of relaying a message (docs/BENCHMARKS.md). Nothing in them needs escaping: numbers,
/// UUIDs, timestamps and base64. Everything else goes through `JSONEncoder`; the tests decode
/// both kinds of text with `JSONDecoder` and compare them with what `JSONEncoder` writes.
enum StreamFrameText {
    private static let dates = MillisecondDateTranscoder()

    /// `{"entry": MailboxEntry}` for an envelope; nil for other kinds.
    static func entry(_ row: MailboxEntry) throws -> String? {
        guard row.kind == .envelope, let messageID = row.messageID else { return nil }
        return
            #"{"entry":{"cursor":\#(row.cursor),"kind":"envelope","senderUserId":"\#(row.sender.userID.canonicalString)","#
            + #""senderDeviceId":"\#(row.sender.deviceID.canonicalString)","messageId":"\#(messageID.canonicalString)","#
            + #""receivedAt":"\#(try dates.encode(row.receivedAt))","envelope":"\#(row.payload.base64EncodedString())"}}"#
    }

    /// `{"receipt": MessageReceipt}`; nil if the message id (the client's text) is not plainly a UUID.
    static func receipt(_ receipt: Components.Schemas.MessageReceipt) throws -> String? {
        guard
            receipt.messageId.utf8.allSatisfy({
                $0 == UInt8(ascii: "-") || ($0 < 128 && Character(Unicode.Scalar($0)).isHexDigit)
            })
        else {
            return nil
        }
        return
            #"{"receipt":{"messageId":"\#(receipt.messageId)","stored":\#(receipt.stored),"duplicate":\#(receipt.duplicate),"#
            + #""receivedAt":"\#(try dates.encode(receipt.receivedAt))"}}"#
    }
}
