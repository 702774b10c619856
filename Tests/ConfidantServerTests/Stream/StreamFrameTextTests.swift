import ConfidantAPI
import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantServer

/// The hand-written entry and receipt frames read back as exactly what `JSONEncoder` would have
/// written, whichever times come one after another (the last time's text is kept).
@Suite("Stream frame text")
struct StreamFrameTextTests {
    private static func decoded(_ text: String) throws -> Components.Schemas.StreamFrame {
        try StreamCoding.decoder().decode(Components.Schemas.StreamFrame.self, from: Data(text.utf8))
    }

    /// What a client reads from `JSONEncoder`'s text of `frame` (times to the millisecond).
    private static func viaEncoder(_ frame: Components.Schemas.StreamFrame) throws -> Components.Schemas.StreamFrame {
        try decoded(String(decoding: try StreamCoding.encoder().encode(frame), as: UTF8.self))
    }

    @Test("entries and receipts equal JSONEncoder's frames for alternating times; odd message ids are left to it")
    func matchesEncoder() throws {
        let times = [1_764_000_000.1234, 1_764_000_000.1234, 1_764_000_001.9996, 0, 1_764_000_000.1234].map {
            Date(timeIntervalSince1970: $0)
        }
        let sender = DeviceAddress(userID: UUID(), deviceID: UUID())
        var scanner = StreamFrameScanner()
        for (index, time) in times.enumerated() {
            let entry = MailboxEntry(
                cursor: Int64(index + 1), kind: .envelope, sender: sender, messageID: .timeOrdered(at: time),
                payload: Data((0..<(index * 37)).map { UInt8(truncatingIfNeeded: $0) }), receivedAt: time)
            // Written by hand (not by the JSONEncoder fallback), and framed as `{"entry": …}`.
            #expect(try StreamFrameText.envelopeObject(entry) != nil)
            let text = try #require(try StreamFrameText.frames([entry], batched: false).first)
            #expect(try Self.decoded(text) == Self.viaEncoder(Components.Schemas.StreamFrame(entry: try entry.wire)))
            #expect(scanner.frame(text) == (try Self.decoded(text)))

            let receipt = Components.Schemas.MessageReceipt(
                messageId: UUID().uuidString, stored: index, duplicate: index % 2 == 0, receivedAt: time)
            let receiptText = try #require(try StreamFrameText.receipt(receipt))
            #expect(try Self.decoded(receiptText) == Self.viaEncoder(Components.Schemas.StreamFrame(receipt: receipt)))
            #expect(scanner.frame(receiptText) == (try Self.decoded(receiptText)))
        }
        let odd = Components.Schemas.MessageReceipt(
            messageId: "not \"a\" uuid", stored: 1, duplicate: false, receivedAt: times[0])
        #expect(try StreamFrameText.receipt(odd) == nil)
    }

    /// 300 envelopes of 100 bytes, one of 300 KiB, five of 100 KiB, from one sender at one time:
    /// the sizes that fill, split and overflow batches; `cursor` numbers them by position.
    static func batchFixture(cursor: (Int) -> Int64) -> [MailboxEntry] {
        let sender = DeviceAddress(userID: UUID(), deviceID: UUID())
        let time = Date(timeIntervalSince1970: 1_764_000_000.5)
        let sizes = Array(repeating: 100, count: 300) + [300 << 10] + Array(repeating: 100 << 10, count: 5)
        return sizes.enumerated().map { index, size in
            MailboxEntry(
                cursor: cursor(index), kind: .envelope, sender: sender, messageID: UUID(),
                payload: Data(repeating: UInt8(index % 256), count: size), receivedAt: time)
        }
    }

    /// A key-change notice from `entry`'s sender at its time.
    static func notice(cursor: Int64, like entry: MailboxEntry) -> MailboxEntry {
        let notice = Components.Schemas.KeyChange(
            userId: entry.sender.userID.uuidString, deviceId: entry.sender.deviceID.uuidString, change: .added)
        return MailboxEntry(
            cursor: cursor, kind: .keyChange, sender: entry.sender, messageID: nil,
            payload: (try? StreamCoding.encoder().encode(notice)) ?? Data(), receivedAt: entry.receivedAt)
    }

    @Test("batched frames: at most 256 entries and 256 KiB of envelopes each, a larger entry alone, notices too")
    func batches() throws {
        var entries = Self.batchFixture { Int64($0 + 1) }
        entries.insert(Self.notice(cursor: 0, like: entries[0]), at: 0)
        let frames = try StreamFrameText.frames(entries, batched: true)
        let decoded = try frames.map { try Self.decoded($0) }
        // 257 small ones (the notice and 256 envelopes), 44, the large one alone, 2 + 2 + 1 of 100 KiB.
        #expect(decoded.map { $0.entries?.count ?? 0 } == [256, 45, 1, 2, 2, 1])
        #expect(decoded.allSatisfy { $0.entry == nil })
        let expected = try Self.viaEncoder(
            Components.Schemas.StreamFrame(entries: try entries.map { try $0.wire })
        ).entries
        #expect(decoded.flatMap { $0.entries ?? [] } == expected)
        // The client's scanner reads the envelope-only frames as the decoder does, and leaves the
        // first (it holds a notice) to the decoder.
        var scanner = StreamFrameScanner()
        let scanned = frames.map { scanner.frame($0) }
        #expect(scanned[0] == nil)
        #expect(Array(scanned.dropFirst()) == decoded.dropFirst().map { Optional($0) })
        #expect(try StreamFrameText.frames(entries, batched: false).count == entries.count)
        #expect(try StreamFrameText.frames([], batched: true).isEmpty)
    }

    @Test("the client's scanner never reads a damaged frame differently from JSONDecoder, and never reads a cut one")
    func scannerOnDamagedFrames() throws {
        let sender = DeviceAddress(userID: UUID(), deviceID: UUID())
        let time = Date(timeIntervalSince1970: 1_764_000_000.25)
        let entries = (1...3).map { index in
            MailboxEntry(
                cursor: Int64(index), kind: .envelope, sender: sender, messageID: UUID(),
                payload: Data((0..<(index * 11)).map { UInt8(truncatingIfNeeded: $0 &* 7) }), receivedAt: time)
        }
        let receipt = try #require(
            try StreamFrameText.receipt(
                Components.Schemas.MessageReceipt(
                    messageId: UUID().canonicalString, stored: 3, duplicate: true, receivedAt: time)))
        let texts =
            try StreamFrameText.frames(entries, batched: true) + StreamFrameText.frames(entries, batched: false)
            + [receipt]
        var scanner = StreamFrameScanner()
        // Replacements that keep the text valid UTF-8: a digit, a quote, a backslash, a space, a
        // brace, base64's own characters.
        let replacements: [UInt8] = Array(#"0 9"\{}],+/=Aa-:"#.utf8)
        var damaged = 0
        for text in texts {
            let bytes = Array(text.utf8)
            #expect(scanner.frame(text) != nil)
            // Cut anywhere: not a frame.
            for end in 0..<bytes.count {
                #expect(scanner.frame(String(decoding: bytes[..<end], as: UTF8.self)) == nil)
            }
            // One byte replaced anywhere: nil (left to the decoder), or what the decoder reads.
            for index in bytes.indices {
                for replacement in replacements where replacement != bytes[index] {
                    var copy = bytes
                    copy[index] = replacement
                    let changed = String(decoding: copy, as: UTF8.self)
                    guard let frame = scanner.frame(changed) else { continue }
                    damaged += 1
                    #expect(frame == (try? Self.decoded(changed)), "\(changed)")
                }
            }
        }
        // Some changes still make a frame (another cursor, another id): those were compared.
        #expect(damaged > 0)
        // Other layouts are left to the decoder.
        for text in [
            #"{"entries":[]}"#, #"{"caughtUp":true}"#,
            #" {"receipt":{"messageId":"a","stored":1,"duplicate":true,"receivedAt":"x"}}"#,
        ] {
            #expect(scanner.frame(text) == nil)
        }
    }
}
