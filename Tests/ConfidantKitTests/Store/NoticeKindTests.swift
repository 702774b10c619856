import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("Notices keep their kind: a timer line is not a key-change warning")
struct NoticeKindTests {
    @Test("a notice stored before kinds were kept reads as a key-change warning, as it was one")
    func noticesFromBeforeKinds() throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try profile.storage.prepare()
        let peer = UUID()
        let notice = UUID.timeOrdered()
        do {
            let old = try DatabaseQueue(path: profile.storage.storeURL.path)
            try LocalStoreSchema.migrator.migrate(old, upTo: "v7-replays")
            try old.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO message (message_id, peer_id, direction, sent_at, unreadable_reason, state, is_read)
                        VALUES (?, ?, ?, 1800000000, 'not kept', 'received', 1)
                        """,
                    arguments: [notice.canonicalString, peer.canonicalString, ChatMessage.Direction.notice])
            }
        }
        let store = try LocalStore.open(at: profile.storage.storeURL, identity: PrivateIdentity.generate())
        let line = try #require(try store.message(id: notice, direction: .notice))
        #expect(line.noticeKind == nil && line.warnsOfKeyChange)
        let timer = try #require(
            try store.insert([
                LocalStore.NewMessage(
                    id: UUID.timeOrdered(), peer: peer, direction: .notice, senderDevice: nil, sentAt: Date(),
                    text: "You turned disappearing messages off", unreadableReason: nil, state: .received,
                    noticeKind: .timer)
            ]).first)
        #expect(timer.noticeKind == .timer && !timer.warnsOfKeyChange)
        #expect(try store.message(id: timer.id, direction: .notice)?.noticeKind == .timer, "as read back")
    }
}
