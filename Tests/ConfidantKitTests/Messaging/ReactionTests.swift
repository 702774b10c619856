import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("Reactions against a real relay")
struct ReactionTests {
    @Test("a reaction reaches the other side and the reactor's; a new one replaces it; taken back, it goes")
    func reactAndChange() async throws {
        try await KitUser.pairOnRelay { _, alice, bob in
            let lunch = try await alice.messenger.send("lunch at noon?", to: bob.contact)
            _ = try await bob.messenger.sync()
            let (aliceID, bobID) = (await alice.messenger.me, await bob.messenger.me)
            let onAlices = { try await alice.messenger.history(with: bobID).first { $0.id == lunch.id }?.reactions }
            let onBobs = { try await bob.messenger.history(with: aliceID).first { $0.id == lunch.id }?.reactions }

            try await bob.messenger.react(to: lunch.id, with: "👍")
            _ = try await alice.messenger.sync()
            #expect(try await onAlices()?.map(\.emoji) == ["👍"])
            #expect(try await onAlices()?.first?.reactor == bobID)
            #expect(try await onBobs()?.map(\.emoji) == ["👍"], "the reactor's own copy shows it at once")

            try await bob.messenger.react(to: lunch.id, with: "❤️")
            try await alice.messenger.react(to: lunch.id, with: "😂")
            _ = try await alice.messenger.sync()
            _ = try await bob.messenger.sync()
            for side in [try await onAlices(), try await onBobs()] {
                #expect(
                    Set(side?.map { "\($0.reactor == aliceID ? "alice" : "bob") \($0.emoji)" } ?? []) == [
                        "bob ❤️", "alice 😂",
                    ])
            }

            try await bob.messenger.react(to: lunch.id, with: nil)
            _ = try await alice.messenger.sync()
            #expect(try await onAlices()?.map(\.emoji) == ["😂"])
            #expect(try await onBobs()?.map(\.emoji) == ["😂"])

            await #expect(throws: ConfidantKitError.notAReaction("nice")) {
                try await bob.messenger.react(to: lunch.id, with: "nice")
            }
            let unknown = UUID()
            await #expect(throws: ConfidantKitError.messageNotFound(unknown)) {
                try await bob.messenger.react(to: unknown, with: "👍")
            }
            // A deleted message takes none.
            try await alice.messenger.deleteForEveryone(lunch.id)
            _ = try await bob.messenger.sync()
            await #expect(throws: ConfidantKitError.messageNotFound(lunch.id)) {
                try await bob.messenger.react(to: lunch.id, with: "👍")
            }
        }
    }

    @Test("a reaction someone outside the conversation seals naming its message changes nothing")
    func outsiderForgery() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let message = try await alice.messenger.send("just us", to: bob.contact)
            let carol = try await KitUser.register(relay, name: "Carol")
            defer { carol.profile.remove() }
            let aliceID = await alice.messenger.me
            _ = try await carol.messenger.contact(email: alice.email)
            try carol.messenger.store.write { db in
                try carol.messenger.store.queueControl(
                    ChatPayload(conversation: aliceID, content: .reaction(messageID: message.id, emoji: "👎")),
                    to: aliceID, now: Date(), db)
            }
            _ = try await carol.messenger.flushOutbox()
            // A message after it: once Alice has that, she has handled the reaction before it.
            let after = try await carol.messenger.send(
                "hello Alice", to: try await carol.messenger.contact(email: alice.email))
            #expect(try await alice.messenger.sync().map(\.id).contains(after.id))
            let mine = try #require(
                try await alice.messenger.history(with: bob.messenger.me).first { $0.id == message.id })
            #expect(mine.reactions.isEmpty)
        }
    }

    @Test("kind 10 as docs/PROTOCOL.md §8 writes it; anything but one emoji is refused")
    func payloadFormat() throws {
        let conversation = try #require(UUID(uuidString: "0192d7e0-0000-7000-8000-000000000001"))
        let target = try #require(UUID(uuidString: "0192d7e0-0000-7000-8000-00000000000a"))
        let payload = ChatPayload(conversation: conversation, content: .reaction(messageID: target, emoji: "👍"))
        let bytes = try payload.serialized
        #expect(bytes.prefix(2) == Data([1, 10]))
        #expect(
            String(decoding: bytes.dropFirst(18), as: UTF8.self)
                == #"{"emoji":"👍","messageId":"0192D7E0-0000-7000-8000-00000000000A"}"#)
        #expect(try ChatPayload(serialized: bytes) == payload)
        let removal = ChatPayload(conversation: conversation, content: .reaction(messageID: target, emoji: nil))
        #expect(String(decoding: try removal.serialized.dropFirst(18), as: UTF8.self).contains("emoji") == false)
        #expect(try ChatPayload(serialized: try removal.serialized) == removal)

        for accepted in ["👍", "❤️", "🇺🇦", "👩‍👩‍👧", "👍🏽"] { #expect(ReactionEmoji.accepts(accepted), "\(accepted)") }
        for refused in ["", "a", "1", "#", "👍👍", "ok 👍", "🏴" + String(repeating: "\u{E0065}", count: 20)] {
            #expect(!ReactionEmoji.accepts(refused), "\(refused.unicodeScalars.map { String($0.value, radix: 16) })")
            let body = Data(#"{"emoji":"\#(refused)","messageId":"\#(target.uuidString)"}"#.utf8)
            let forged = Data([1, 10]) + withUnsafeBytes(of: conversation.uuid) { Data($0) } + body
            #expect(throws: ChatPayloadError.self) { try ChatPayload(serialized: forged) }
        }
    }

    @Test("stored reactions keep the latest per person, a removal included")
    func latestWins() {
        var reactions = StoredReactions()
        let (alice, bob) = (UUID(), UUID())
        let start = Date(timeIntervalSince1970: 1_000)
        let outcomes = [
            reactions.set("👍", by: bob, at: start), reactions.set("😂", by: bob, at: start),
            reactions.set("❤️", by: bob, at: start + 1), reactions.set("😮", by: alice, at: start),
        ]
        #expect(outcomes == [true, false, true, true], "as recent as the one held: kept")
        #expect(reactions.shown.map(\.emoji) == ["😮", "❤️"])
        let removed = reactions.set(nil, by: bob, at: start + 2)
        let older = reactions.set("👍", by: bob, at: start + 1.5)
        #expect(removed && !older)
        #expect(reactions.shown.map(\.emoji) == ["😮"])
    }
}
