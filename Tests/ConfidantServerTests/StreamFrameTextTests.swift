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
        for (index, time) in times.enumerated() {
            let entry = MailboxEntry(
                cursor: Int64(index + 1), kind: .envelope, sender: sender, messageID: .timeOrdered(at: time),
                payload: Data((0..<(index * 37)).map { UInt8(truncatingIfNeeded: $0) }), receivedAt: time)
            let text = try #require(try StreamFrameText.entry(entry))
            #expect(try Self.decoded(text) == Self.viaEncoder(Components.Schemas.StreamFrame(entry: try entry.wire)))

            let receipt = Components.Schemas.MessageReceipt(
                messageId: UUID().uuidString, stored: index, duplicate: index % 2 == 0, receivedAt: time)
            let receiptText = try #require(try StreamFrameText.receipt(receipt))
            #expect(try Self.decoded(receiptText) == Self.viaEncoder(Components.Schemas.StreamFrame(receipt: receipt)))
        }
        let odd = Components.Schemas.MessageReceipt(
            messageId: "not \"a\" uuid", stored: 1, duplicate: false, receivedAt: times[0])
        #expect(try StreamFrameText.receipt(odd) == nil)
    }
}
