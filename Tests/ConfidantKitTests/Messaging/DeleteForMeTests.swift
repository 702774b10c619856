import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("Deleting a message for me: this device only, files included, and it does not come back")
struct DeleteForMeTests {
    typealias Files = RichMessageTests.Files

    static func count(_ messenger: Messenger, _ sql: String, _ arguments: StatementArguments = []) throws -> Int {
        try messenger.store.read { db in try Int.fetchOne(db, sql: sql, arguments: arguments) ?? -1 }
    }

    @Test(
        "a received message with a file goes from Bob's device, rows and file; Alice keeps hers; a wrong id is refused")
    func receivedMessage() async throws {
        try await RichMessageTests.withPair { _, alice, bob, files in
            let source = try files.write("photo.jpg", RichMessageTests.bytes(40_000, seed: 7))
            let kept = try await alice.messenger.send("keep this", to: bob.contact)
            let photo = try await alice.messenger.send(
                "and this photo", attachments: [AttachmentSource(url: source)], to: bob.contact)
            let aliceID = await alice.messenger.me
            _ = try await bob.messenger.sync()
            let saved = try await bob.messenger.saveAttachment(of: photo.id, index: 0, to: files.directory)
            try FileManager.default.removeItem(at: saved)
            #expect(try Self.count(bob.messenger, "SELECT COUNT(*) FROM attachment") == 1)

            // Not in this conversation, or no such message: refused, nothing changes.
            await #expect(throws: ConfidantKitError.messageNotFound(photo.id)) {
                try await bob.messenger.deleteForMe(photo.id, with: UUID())
            }
            let unknown = UUID()
            await #expect(throws: ConfidantKitError.messageNotFound(unknown)) {
                try await bob.messenger.deleteForMe(unknown, with: aliceID)
            }

            try await bob.messenger.deleteForMe(photo.id, with: aliceID)
            #expect(try await bob.messenger.history(with: aliceID).map(\.id) == [kept.id])
            #expect(try Self.count(bob.messenger, "SELECT COUNT(*) FROM attachment") == 0)
            #expect(
                try Self.count(
                    bob.messenger, "SELECT COUNT(*) FROM message WHERE message_id = ?", [photo.id.canonicalString]) == 0
            )
            // Its id is remembered as seen, so a copy handed over again is dropped as a replay.
            #expect(
                try Self.count(
                    bob.messenger, "SELECT COUNT(*) FROM seen_envelope WHERE message_id = ? AND sender_id = ?",
                    [photo.id.canonicalString, aliceID.canonicalString]) == 1)
            await #expect(throws: ConfidantKitError.messageNotFound(photo.id)) {
                try await bob.messenger.saveAttachment(of: photo.id, index: 0, to: files.directory)
            }
            // Alice's device and Bob's peer are untouched: she still has both, and later messages flow.
            #expect(try await alice.messenger.history(with: bob.contact.id).map(\.id) == [kept.id, photo.id])
            let later = try await alice.messenger.send("still here?", to: bob.contact)
            #expect(try await bob.messenger.sync().map(\.id) == [later.id])
        }
    }

    @Test("an own message still waiting in the outbox is deleted and never sent")
    func waitingMessage() async throws {
        try await RichMessageTests.withPair { _, alice, bob, _ in
            let waiting = UUID.timeOrdered()
            _ = try await alice.messenger.store.queue(
                LocalStore.NewMessage(
                    id: waiting, peer: bob.contact.id, direction: .outgoing,
                    senderDevice: alice.messenger.identity.deviceID,
                    sentAt: Date(), text: "second thoughts", unreadableReason: nil, state: .pending),
                confirmed: false, now: Date())
            #expect(try Self.count(alice.messenger, "SELECT COUNT(*) FROM outbox") == 1)
            try await alice.messenger.deleteForMe(waiting, with: bob.contact.id)
            #expect(try Self.count(alice.messenger, "SELECT COUNT(*) FROM outbox") == 0)
            #expect(try await alice.messenger.history(with: bob.contact.id).isEmpty)
            _ = try await alice.messenger.flushOutbox()
            let after = try await alice.messenger.send("after", to: bob.contact)
            #expect(try await bob.messenger.sync().map(\.id) == [after.id], "only the message after it arrives")
        }
    }
}
