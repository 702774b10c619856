import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

@testable import ConfidantKit

/// A relay can force one-shot (v1) envelopes by withholding prekeys and hand any of them over
/// again. What they carry applies once: a replayed timer, edit or vanished message changes
/// nothing, and neither does one older than the replay window.
@Suite("A relay that hands an envelope over again")
struct ReplayTests {
    /// A v1 envelope sealed by Alice's device for Bob's, carrying `payload`, as an entry of Bob's
    /// mailbox (what Alice's client sends a device without prekeys).
    static func entry(
        _ payload: ChatPayload, from alice: KitUser, to bob: KitUser, id: UUID = UUID(), sentAt: Date,
        cursor: Int64
    ) async throws -> Components.Schemas.MailboxEntry {
        let (aliceID, bobID) = (await alice.messenger.me, await bob.messenger.me)
        let envelope = try SealedEnvelope.seal(
            try payload.serialized, from: alice.messenger.identity, senderUserID: aliceID,
            to: bob.messenger.identity.publicIdentity, recipientUserID: bobID, signed: true, messageID: id,
            timestamp: sentAt)
        return Components.Schemas.MailboxEntry(
            cursor: cursor, kind: .envelope, senderUserId: aliceID.canonicalString,
            senderDeviceId: alice.messenger.identity.deviceID.canonicalString, messageId: id.canonicalString,
            receivedAt: Date(), envelope: Base64EncodedData(envelope.serialized))
    }

    @Test("a replayed timer, an older one, and one older than the window leave the latest setting and no notice")
    func timers() async throws {
        try await KitUser.pairOnRelay { _, alice, bob in
            _ = try await alice.messenger.send("hello", to: bob.contact)
            _ = try await bob.messenger.sync()
            let (aliceID, receiver) = (await alice.messenger.me, await bob.messenger.receiver)
            let now = Date()
            let hour = try await Self.entry(
                ChatPayload(conversation: aliceID, content: .timer(expiresAfter: 3600)), from: alice, to: bob,
                sentAt: now.addingTimeInterval(-20), cursor: 1_000_001)
            _ = try await receiver.receive([hour])
            #expect(try await bob.messenger.disappearingTimer(with: aliceID) == 3600)
            let off = try await Self.entry(
                ChatPayload(conversation: aliceID, content: .timer(expiresAfter: 0)), from: alice, to: bob,
                sentAt: now.addingTimeInterval(-10), cursor: 1_000_002)
            _ = try await receiver.receive([off])
            #expect(try await bob.messenger.disappearingTimer(with: aliceID) == nil)
            let notices = try await bob.messenger.history(with: aliceID).filter { $0.direction == .notice }.count

            var replayed = hour
            replayed.cursor = 1_000_003
            _ = try await receiver.receive([replayed])
            #expect(try await bob.messenger.disappearingTimer(with: aliceID) == nil, "the replay does not turn it on")
            // A new id but sent before the setting in force: overtaken on the way, not applied.
            let older = try await Self.entry(
                ChatPayload(conversation: aliceID, content: .timer(expiresAfter: 300)), from: alice, to: bob,
                sentAt: now.addingTimeInterval(-15), cursor: 1_000_004)
            // Older than the window: its id may have been forgotten, so nothing that old applies.
            let ancient = try await Self.entry(
                ChatPayload(conversation: aliceID, content: .timer(expiresAfter: 300)), from: alice, to: bob,
                sentAt: now.addingTimeInterval(-LocalStore.replayWindow - 60), cursor: 1_000_005)
            _ = try await receiver.receive([older, ancient])
            #expect(try await bob.messenger.disappearingTimer(with: aliceID) == nil)
            #expect(try await bob.messenger.history(with: aliceID).filter { $0.direction == .notice }.count == notices)
        }
    }

    @Test("a replayed edit does not roll the text back")
    func edits() async throws {
        try await KitUser.pairOnRelay { _, alice, bob in
            let original = try await alice.messenger.send("first", to: bob.contact)
            _ = try await bob.messenger.sync()
            let (aliceID, receiver) = (await alice.messenger.me, await bob.messenger.receiver)
            let now = Date()
            let second = try await Self.entry(
                ChatPayload(conversation: aliceID, content: .edit(messageID: original.id, text: "second")),
                from: alice, to: bob, sentAt: now.addingTimeInterval(-2), cursor: 1_000_001)
            let third = try await Self.entry(
                ChatPayload(conversation: aliceID, content: .edit(messageID: original.id, text: "third")),
                from: alice, to: bob, sentAt: now.addingTimeInterval(-1), cursor: 1_000_002)
            _ = try await receiver.receive([second, third])
            #expect(try await bob.messenger.history(with: aliceID).first?.text == "third")
            var replayed = second
            replayed.cursor = 1_000_003
            _ = try await receiver.receive([replayed])
            #expect(try await bob.messenger.history(with: aliceID).first?.text == "third")
        }
    }

    @Test("a replayed or older reaction does not undo a newer one, nor bring back one taken back")
    func reactions() async throws {
        try await KitUser.pairOnRelay { _, alice, bob in
            let original = try await bob.messenger.send("lunch?", to: alice.contact)
            _ = try await alice.messenger.sync()
            let (aliceID, receiver) = (await alice.messenger.me, await bob.messenger.receiver)
            let now = Date()
            let reaction = { (emoji: String?, seconds: TimeInterval, cursor: Int64) in
                try await Self.entry(
                    ChatPayload(conversation: aliceID, content: .reaction(messageID: original.id, emoji: emoji)),
                    from: alice, to: bob, sentAt: now.addingTimeInterval(seconds), cursor: cursor)
            }
            let shown = { try await bob.messenger.history(with: aliceID).first?.reactions.map(\.emoji) }
            let thumbs = try await reaction("👍", -3, 1_000_001)
            let heart = try await reaction("❤️", -2, 1_000_002)
            _ = try await receiver.receive([thumbs, heart])
            #expect(try await shown() == ["❤️"], "one per person: the later one")
            var replayed = thumbs
            replayed.cursor = 1_000_003
            _ = try await receiver.receive([replayed, try await reaction("😂", -2.5, 1_000_004)])
            #expect(try await shown() == ["❤️"], "neither the replay nor an older one undoes it")
            _ = try await receiver.receive([try await reaction(nil, -1, 1_000_005)])
            #expect(try await shown() == [], "taken back")
            _ = try await receiver.receive([try await reaction("😮", -1.5, 1_000_006)])
            #expect(try await shown() == [], "an older one does not come back after it was taken back")
        }
    }

    @Test("a disappearing message that is gone does not come back with a copy of its envelope; nor does one too old")
    func vanishedMessages() async throws {
        try await KitUser.pairOnRelay { _, alice, bob in
            _ = try await alice.messenger.send("hello", to: bob.contact)
            _ = try await bob.messenger.sync()
            let (aliceID, bobID, receiver) = (
                await alice.messenger.me, await bob.messenger.me, await bob.messenger.receiver
            )
            let id = UUID()
            let fleeting = try await Self.entry(
                ChatPayload(conversation: bobID, content: .message(RichMessage(text: "fleeting", expiresAfter: 30))),
                from: alice, to: bob, id: id, sentAt: Date(), cursor: 1_000_001)
            _ = try await receiver.receive([fleeting])
            #expect(try await bob.messenger.history(with: aliceID).contains { $0.id == id })
            #expect(try bob.messenger.store.deleteExpired(now: Date().addingTimeInterval(60), me: bobID) == 1)
            var replayed = fleeting
            replayed.cursor = 1_000_002
            _ = try await receiver.receive([replayed])
            #expect(try await !bob.messenger.history(with: aliceID).contains { $0.id == id }, "it stays gone")

            let ancient = try await Self.entry(
                ChatPayload(conversation: bobID, text: "from long ago"), from: alice, to: bob,
                sentAt: Date().addingTimeInterval(-LocalStore.replayWindow - 60), cursor: 1_000_003)
            _ = try await receiver.receive([ancient])
            #expect(try await !bob.messenger.history(with: aliceID).contains { $0.text == "from long ago" })
        }
    }
}
