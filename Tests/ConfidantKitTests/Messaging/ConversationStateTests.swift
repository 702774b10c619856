import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("Drafts and \"mark as unread\"")
struct ConversationStateTests {
    @Test("a draft is kept sealed per conversation, listed with it, bound to its row, and removed when emptied")
    func draftsAtRest() throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try profile.storage.prepare()
        let store = try LocalStore.open(at: profile.storage.storeURL, identity: PrivateIdentity.generate())
        let (peer, other) = (
            Contact(id: UUID(), email: "draft-peer@example.com", displayName: "Draft Peer"),
            Contact(id: UUID(), email: "other-peer@example.com", displayName: "Other Peer")
        )
        for contact in [peer, other] {
            try store.saveContact(contact)
            try store.insert([
                .init(
                    id: UUID(), peer: contact.id, direction: .incoming, senderDevice: UUID(), sentAt: Date(),
                    text: "hello", unreadableReason: nil, state: .received)
            ])
        }
        let answered = UUID()
        try store.saveDraft(ChatDraft(text: "the half-written walrus plan", replyTo: answered), in: peer.id)
        #expect(
            try store.read { db in try store.draft(in: peer.id, db) }
                == ChatDraft(text: "the half-written walrus plan", replyTo: answered))
        #expect(try store.read { db in try store.draft(in: other.id, db) } == nil)
        let listed = try store.conversations()
        #expect(listed.first { $0.id == peer.id }?.draft?.text == "the half-written walrus plan")
        #expect(listed.first { $0.id == other.id }?.draft == nil)

        var bytes = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: profile.directory.path) {
            bytes += try Data(contentsOf: profile.directory.appendingPathComponent(name))
        }
        #expect(bytes.range(of: Data("half-written".utf8)) == nil, "the draft is in the profile's files")

        // Moved to another conversation's row, the sealed draft does not open.
        try store.write { db in
            try db.execute(
                sql: """
                    INSERT INTO conversation_state (conversation_id, draft)
                    SELECT ?, draft FROM conversation_state WHERE conversation_id = ?
                    """, arguments: [other.id.canonicalString, peer.id.canonicalString])
        }
        #expect(throws: (any Error).self) { try store.read { db in try store.draft(in: other.id, db) } }

        try store.saveDraft(ChatDraft(text: ""), in: peer.id)
        #expect(try store.read { db in try store.draft(in: peer.id, db) } == nil)
        let rows = try store.read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM conversation_state WHERE conversation_id = ?",
                arguments: [peer.id.canonicalString])
        }
        #expect(rows == 0, "an emptied draft leaves no row")
    }

    @Test("a chat's draft comes back when it opens again, with the message it answers; sending clears it")
    func draftThroughTheChat() async throws {
        try await KitUser.pairOnRelay { _, alice, bob in
            let question = try await alice.messenger.send("dinner?", to: bob.contact)
            _ = try await bob.messenger.sync()
            let typing = await ChatViewModel(messenger: bob.messenger, peer: alice.contact)
            await typing.load()
            await MainActor.run {
                typing.draft = "yes, if you"
                typing.replyingTo = question.id
            }
            await typing.saveDraft()

            let reopened = await ChatViewModel(messenger: bob.messenger, peer: alice.contact)
            await reopened.load()
            #expect(await reopened.draft == "yes, if you")
            #expect(await reopened.replyingTo == question.id)
            await MainActor.run { reopened.draft = "yes, if you cook" }
            let sent = try #require(await reopened.send())
            #expect(sent.reply?.messageID == question.id)
            #expect(try await bob.messenger.draft(in: alice.contact.id) == nil)
            let third = await ChatViewModel(messenger: bob.messenger, peer: alice.contact)
            await third.load()
            #expect(await third.draft == "")
            #expect(await third.replyingTo == nil)

            let tooLong = String(repeating: "x", count: ChatPayload.maximumTextBytes + 1)
            await #expect(
                throws: ConfidantKitError.messageTooLarge(
                    bytes: tooLong.utf8.count,
                    limit: ChatPayload.maximumTextBytes)
            ) {
                try await bob.messenger.saveDraft(ChatDraft(text: tooLong), in: alice.contact.id)
            }
        }
    }

    @Test("marked unread, a read chat counts as one unread until it opens; nobody is told")
    func markUnread() async throws {
        try await KitUser.pairOnRelay { _, alice, bob in
            _ = try await alice.messenger.send("one", to: bob.contact)
            _ = try await alice.messenger.send("two", to: bob.contact)
            _ = try await bob.messenger.sync()
            let aliceID = await alice.messenger.me
            try await bob.messenger.markRead(aliceID)
            _ = try await bob.messenger.flushOutbox()
            let summary = { try await bob.messenger.conversations().first { $0.id == aliceID } }
            #expect(try await summary()?.shownUnread == 0)
            let queued = {
                try bob.messenger.store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM control_outbox") }
            }
            let before = try queued()

            try await bob.messenger.markUnread(aliceID)
            #expect(try await summary()?.markedUnread == true)
            #expect(try await summary()?.shownUnread == 1, "one, not the two already read")
            #expect(try await summary()?.unread == 0, "the messages keep their read marks")
            #expect(try queued() == before, "no receipt is queued")

            let chat = await ChatViewModel(messenger: bob.messenger, peer: alice.contact)
            await chat.load()
            #expect(try await summary()?.markedUnread == false)
            #expect(try await summary()?.shownUnread == 0)
            let rows = try bob.messenger.store.read { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM conversation_state")
            }
            #expect(rows == 0)
        }
    }
}
