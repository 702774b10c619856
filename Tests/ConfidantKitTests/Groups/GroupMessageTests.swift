import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

/// Messages to a group through a real relay: every member's copy under one id, the author's
/// name on each, nothing for a removed member, and a copy from someone outside the group
/// shown as unreadable.
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
                        let reply = try await b.sendToGroup(group, text: "hi Alice, hi Carol")
                        _ = try await a.sync()
                        _ = try await c.sync()
                        #expect(try await a.groupHistory(group).map(\.text) == ["hello, both", "hi Alice, hi Carol"])
                        #expect(try await c.groupHistory(group).last?.id == reply.id)
                        // Edits and receipts are one-to-one only for now: refused, not lost.
                        await #expect(throws: ConfidantKitError.notInGroupsYet("changing a sent message")) {
                            try await a.edit(sent.id, text: "hello, all")
                        }

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
                            try c.store.queueControl(forged, to: bobID, toOwnDevices: false, now: Date(), db)
                        }
                        _ = try await c.flushOutbox()
                        _ = try await b.sync()
                        let last = try #require(try await b.groupHistory(group).last)
                        #expect(last.text == nil && last.unreadableReason == "its sender is not a member of Trio")
                    }
                }
            }
        }
    }
}
