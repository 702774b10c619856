import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

/// Messages to a group through a real relay: every member's copy under one id, the author's
/// name on each, edits and deletions by their author only, nothing for a removed member, and a
/// copy from someone outside the group shown as unreadable.
@Suite("Group messages between messengers")
struct GroupMessageTests {
    @Test(
        "a message reaches every member and the sender's copy is sent; after a removal the removed member gets nothing and cannot send"
    )
    func messagesFollowMembership() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                try await KitUser.removing(try await KitUser.register(relay, name: "Bob")) { bob in
                    try await KitUser.removing(try await KitUser.register(relay, name: "Carol")) { carol in
                        let (a, b, c) = (alice.messenger, bob.messenger, carol.messenger)
                        let (aliceID, carolID) = (await a.me, await c.me)
                        let group = try await a.createGroup(
                            name: "Trio", members: [await bob.contact, await carol.contact]
                        ).groupID
                        let sent = try await a.sendToGroup(group, text: "hello, both")
                        #expect(sent.status == .sent, "every member's copy went")
                        for messenger in [b, c] {
                            _ = try await messenger.sync()
                            let lines = try await messenger.groupHistory(group)
                            #expect(lines.map(\.id) == [sent.id] && lines.map(\.text) == ["hello, both"])
                            #expect(lines.first?.author == aliceID && lines.first?.direction == .incoming)
                        }
                        try await Self.receipts(group, sent: sent.id, a, b)
                        let reply = try await b.sendToGroup(group, text: "hi Alice, hi Carol")
                        _ = try await a.sync()
                        _ = try await c.sync()
                        #expect(try await a.groupHistory(group).map(\.text) == ["hello, both", "hi Alice, hi Carol"])
                        #expect(try await c.groupHistory(group).last?.id == reply.id)
                        try await Self.changeMessages(group, sent: sent.id, reply: reply.id, a, b, c)
                        try await Self.reactions(group, sent: sent.id, a, b, c)
                        try await Self.replies(group, sent: sent.id, a, b, c)

                        try await a.removeFromGroup(group, [carolID])
                        _ = try await c.sync()
                        _ = try await b.sync()
                        try await a.sendToGroup(group, text: "just us now")
                        _ = try await b.sync()
                        _ = try await c.sync()
                        #expect(try await b.groupHistory(group).last?.text == "just us now")
                        #expect(try await c.groupHistory(group).map(\.text).contains("just us now") == false)
                        await #expect(throws: ConfidantKitError.notGroupMember("Trio")) {
                            try await c.sendToGroup(group, text: "still here?")
                        }

                        // Carol's device sends a copy anyway, by hand: Bob's device, which holds
                        // her removal, shows it as unreadable, with why.
                        let forged = ChatPayload(
                            conversation: group, content: .groupMessage(messageID: UUID(), text: "let me in"))
                        let bobID = await b.me
                        try c.store.write { db in
                            try c.store.queueControl(forged, to: bobID, now: Date(), db)
                        }
                        _ = try await c.flushOutbox()
                        _ = try await b.sync()
                        let last = try #require(try await b.groupHistory(group).last)
                        #expect(last.text == nil && last.unreadableReason == "its sender is not a member of Trio")
                        // Nor does a reaction of hers count any more, sent by hand the same way.
                        let reaction = ChatPayload(
                            conversation: group, content: .reaction(messageID: sent.id, emoji: "👎"))
                        try c.store.write { db in try c.store.queueControl(reaction, to: bobID, now: Date(), db) }
                        _ = try await c.flushOutbox()
                        let waiting = try c.store.read { db in
                            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM control_outbox")
                        }
                        #expect(waiting == 0, "her reaction went")
                        _ = try await b.sync()
                        let reactions = try await b.groupHistory(group).first { $0.id == sent.id }?.reactions
                        #expect(reactions?.contains { $0.emoji == "👎" } == false)
                    }
                }
            }
        }
    }

    /// Each member's delivery receipt, then Bob's read receipt, reach the author alone: "read by
    /// 1 of 2" on Alice's line.
    private static func receipts(_ group: UUID, sent: UUID, _ a: Messenger, _ b: Messenger) async throws {
        _ = try await a.sync()
        let delivered = try #require(try await a.groupHistory(group).first { $0.id == sent }?.groupReceipts)
        #expect(delivered == GroupReceipts(delivered: 2, read: 0, members: 2))
        try await b.markRead(group)
        _ = try await b.flushOutbox()
        _ = try await a.sync()
        let read = try #require(try await a.groupHistory(group).first { $0.id == sent }?.groupReceipts)
        #expect(read == GroupReceipts(delivered: 2, read: 1, members: 2) && read.summary == "read by 1 of 2")
    }

    /// Members' reactions go to the group with their sender keys: every member's copy shows
    /// each member's latest, Alice's own included.
    private static func reactions(_ group: UUID, sent: UUID, _ a: Messenger, _ b: Messenger, _ c: Messenger)
        async throws
    {
        try await b.react(to: sent, with: "👍")
        try await c.react(to: sent, with: "🎉")
        try await c.react(to: sent, with: "👍")
        for messenger in [a, b, c] {
            _ = try await messenger.sync()
            let line = try #require(try await messenger.groupHistory(group).first { $0.id == sent })
            #expect(line.reactions.map(\.emoji) == ["👍", "👍"], "Bob's and Carol's latest, on every member's copy")
        }
    }

    /// A reply in the group carries its quote to every member; one to no message of the group is refused.
    private static func replies(_ group: UUID, sent: UUID, _ a: Messenger, _ b: Messenger, _ c: Messenger)
        async throws
    {
        let answer = try await c.sendToGroup(group, text: "count me in", replyingTo: sent)
        #expect(answer.reply?.messageID == sent)
        for messenger in [a, b] {
            _ = try await messenger.sync()
            let line = try #require(try await messenger.groupHistory(group).first { $0.id == answer.id })
            #expect(line.reply == ReplyQuote(messageID: sent, excerpt: "hello, all"), "the text as edited")
            #expect(!line.replyTargetGone)
        }
        let unknown = UUID()
        await #expect(throws: ConfidantKitError.messageNotFound(unknown)) {
            try await c.sendToGroup(group, text: "to what?", replyingTo: unknown)
        }
        let long = String(repeating: "x", count: ReplyQuote.maximumCharacters + 1)
        let forged =
            Data([1, 8]) + withUnsafeBytes(of: group.uuid) { Data($0) }
            + Data(
                #"{"messageId":"\#(UUID().uuidString)","replyTo":{"excerpt":"\#(long)","messageId":"\#(sent.uuidString)"},"text":"x"}"#
                    .utf8)
        #expect(throws: ChatPayloadError.self) { try ChatPayload(serialized: forged) }
    }

    /// Edits and deletions go to the group with their author's sender key and apply on every
    /// member's device; one that names another member's message changes nothing (it did arrive:
    /// the forger's next message, after it in the same chain, did).
    private static func changeMessages(
        _ group: UUID, sent: UUID, reply: UUID, _ a: Messenger, _ b: Messenger, _ c: Messenger
    ) async throws {
        try await a.edit(sent, text: "hello, all")
        let forged = ChatPayload(conversation: group, content: .edit(messageID: sent, text: "Bob was here"))
        try b.store.write { db in try b.store.queueControl(forged, to: group, now: Date(), db) }
        let after = try await b.sendToGroup(group, text: "after my edit")
        await #expect(throws: ConfidantKitError.notYourMessage(sent)) { try await b.edit(sent, text: "mine now") }
        try await b.deleteForEveryone(reply)
        for messenger in [a, c] {
            _ = try await messenger.sync()
            let lines = try await messenger.groupHistory(group)
            let first = try #require(lines.first { $0.id == sent })
            #expect(first.text == "hello, all" && first.editedAt != nil, "the author's edit, not the forged one")
            #expect(lines.contains { $0.id == after.id }, "the forger's next message arrived")
            let deleted = try #require(lines.first { $0.id == reply })
            #expect(deleted.isDeleted && deleted.text == nil)
        }
        _ = try await b.sync()
        #expect(try await b.groupHistory(group).first { $0.id == sent }?.text == "hello, all")
    }
}
