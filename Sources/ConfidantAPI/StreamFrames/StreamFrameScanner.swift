import Foundation
import OpenAPIRuntime

/// Reads the stream's two most frequent frames — envelope entries (`{"entry": …}` or
/// `{"entries": […]}`) and receipts — in the exact layout the relay writes them (its
/// `StreamFrameText`), without `JSONDecoder`, whose generic path scans every envelope's base64 a
/// character at a time. Anything else, or any byte out of that layout — another key order,
/// whitespace, an escape, a notice entry — gives nil, and the caller decodes the text with
/// `StreamCoding.decoder()` as before. What it returns equals what that decoder returns for the
/// same text (the tests compare them, on good and on damaged frames).
public struct StreamFrameScanner: Sendable {
    private let dates = MillisecondDateTranscoder()
    /// The last time read and its text: a batch's entries all carry their group's time.
    private var lastDate: (text: Substring, date: Date)?

    public init() {}

    /// The frame `text` holds, if it is an entries or receipt frame in the relay's layout.
    public mutating func frame(_ text: String) -> Components.Schemas.StreamFrame? {
        var reader = Reader(bytes: Array(text.utf8))
        if reader.skip(Self.receiptPrefix) {
            guard let receipt = receipt(&reader), reader.skip(Self.close), reader.atEnd else { return nil }
            return Components.Schemas.StreamFrame(receipt: receipt)
        }
        if reader.skip(Self.entryPrefix) {
            guard let entry = entry(&reader), reader.skip(Self.close), reader.atEnd else { return nil }
            return Components.Schemas.StreamFrame(entry: entry)
        }
        guard reader.skip(Self.entriesPrefix) else { return nil }
        var entries: [Components.Schemas.MailboxEntry] = []
        repeat {
            guard let entry = entry(&reader) else { return nil }
            entries.append(entry)
        } while reader.skip(Self.comma)
        guard reader.skip(Self.entriesEnd), reader.atEnd else { return nil }
        return Components.Schemas.StreamFrame(entries: entries)
    }

    /// `{"cursor":N,"kind":"envelope","senderUserId":"…","senderDeviceId":"…","messageId":"…",
    /// "receivedAt":"…","envelope":"…"}`. The base64 is read with the options of the decoder's
    /// `Base64EncodedData`, so the same text gives the same bytes, or fails, in both.
    private mutating func entry(_ reader: inout Reader) -> Components.Schemas.MailboxEntry? {
        guard reader.skip(Self.cursorKey), let cursor = reader.number(),
            reader.skip(Self.envelopeKind),
            let sender = reader.plainString(), reader.skip(Self.deviceKey),
            let device = reader.plainString(), reader.skip(Self.messageKey),
            let message = reader.plainString(), reader.skip(Self.receivedKey),
            let received = reader.plainString(), let receivedAt = date(received), reader.skip(Self.envelopeKey),
            let base64 = reader.plainString(),
            let envelope = Data(base64Encoded: String(base64), options: .ignoreUnknownCharacters),
            reader.skip(Self.close)
        else { return nil }
        return Components.Schemas.MailboxEntry(
            cursor: cursor, kind: .envelope, senderUserId: String(sender), senderDeviceId: String(device),
            messageId: String(message), receivedAt: receivedAt, envelope: Base64EncodedData(envelope))
    }

    /// `{"messageId":"…","stored":N,"duplicate":true|false,"receivedAt":"…"}`
    private mutating func receipt(_ reader: inout Reader) -> Components.Schemas.MessageReceipt? {
        guard let message = reader.plainString(), reader.skip(Self.storedKey),
            let stored = reader.number(), let stored = Int(exactly: stored), reader.skip(Self.duplicateKey)
        else { return nil }
        let duplicate: Bool
        if reader.skip(Self.trueText) {
            duplicate = true
        } else if reader.skip(Self.falseText) {
            duplicate = false
        } else {
            return nil
        }
        guard reader.skip(Self.receiptTimeKey), let received = reader.plainString(), let receivedAt = date(received),
            reader.skip(Self.close)
        else { return nil }
        return Components.Schemas.MessageReceipt(
            messageId: String(message), stored: stored, duplicate: duplicate, receivedAt: receivedAt)
    }

    /// The time as `StreamCoding`'s decoder reads it.
    private mutating func date(_ text: Substring) -> Date? {
        if let last = lastDate, last.text == text { return last.date }
        guard let date = try? dates.decode(String(text)) else { return nil }
        lastDate = (text, date)
        return date
    }

    private static let receiptPrefix = Array(#"{"receipt":{"messageId":""#.utf8)
    private static let entryPrefix = Array(#"{"entry":"#.utf8)
    private static let entriesPrefix = Array(#"{"entries":["#.utf8)
    private static let entriesEnd = Array("]}".utf8)
    private static let cursorKey = Array(#"{"cursor":"#.utf8)
    private static let envelopeKind = Array(#","kind":"envelope","senderUserId":""#.utf8)
    private static let deviceKey = Array(#","senderDeviceId":""#.utf8)
    private static let messageKey = Array(#","messageId":""#.utf8)
    private static let receivedKey = Array(#","receivedAt":""#.utf8)
    private static let envelopeKey = Array(#","envelope":""#.utf8)
    private static let storedKey = Array(#","stored":"#.utf8)
    private static let duplicateKey = Array(#","duplicate":"#.utf8)
    private static let receiptTimeKey = Array(#","receivedAt":""#.utf8)
    private static let trueText = Array("true".utf8)
    private static let falseText = Array("false".utf8)
    private static let close = Array("}".utf8)
    private static let comma = Array(",".utf8)

    /// A cursor over the frame's bytes; every read checks its bounds.
    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        /// Steps over `expected` if the bytes continue with it.
        mutating func skip(_ expected: [UInt8]) -> Bool {
            guard bytes.count - index >= expected.count,
                bytes[index..<index + expected.count].elementsEqual(expected)
            else { return false }
            index += expected.count
            return true
        }

        /// A non-negative decimal of at most 18 digits (no sign, no leading zero but "0").
        mutating func number() -> Int64? {
            let start = index
            var value: Int64 = 0
            while index < bytes.count, index - start < 18,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
            {
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            let digits = index - start
            guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            // A 19th digit would be a number this reader does not take.
            if index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { return nil }
            return value
        }

        /// The text up to the closing quote, which it steps over: printable ASCII without `\` or
        /// `"` (what needs no unescaping); nil for anything else.
        mutating func plainString() -> Substring? {
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                guard bytes[index] >= 0x20, bytes[index] < 0x7f, bytes[index] != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            guard index < bytes.count else { return nil }
            let text = Substring(decoding: bytes[start..<index], as: UTF8.self)
            index += 1
            return text
        }
    }
}
