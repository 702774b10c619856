import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

@Suite("Acknowledgements of what arrives live, held for company")
struct HeldAcknowledgementTests {
    @Test("an acknowledgement frame is the text JSONEncoder writes for it, the relay's fast reader's layout")
    func acknowledgementText() throws {
        let encoder = StreamCoding.encoder()
        for cursors: [Int64] in [[], [1], [7, 8, 9], [Int64.max, 1, 1_000_000_007], (1...1_000).map { $0 * 7_919 }] {
            let text = MailboxStreamClient.acknowledgement(cursors)
            let expected = try encoder.encode(Components.Schemas.StreamRequest(cursors: cursors))
            #expect(text == String(decoding: expected, as: UTF8.self), "\(cursors.prefix(3))")
        }
    }

    @Test(
        "what arrives live is stored at once and acknowledged after the wait, synced first, all together; closing acknowledges what is still held"
    )
    func acknowledgedTogether() async throws {
        try await KitUser.pairOnRelay { relay, alice, bobUser in
            let acknowledging = ManualSleeper()
            let receipts = ManualSleeper()
            var batching = ReceiptBatching()
            batching.sleep = receipts.sleep
            let bob = await bobUser.reopened(
                receipts: batching, acknowledgements: HeldAcknowledgements(sleep: acknowledging.sleep))
            let toBob = try await alice.messenger.contact(email: bobUser.email)
            #expect(await bob.goLive())
            _ = try await bob.flushOutbox()
            // Whatever the set-up left goes now; its wait, ended, asks for nothing more.
            await bob.heldAcknowledgements.acknowledgeNow()
            await acknowledging.release()
            try await waitUntil { try await bobUser.mailboxEntries(after: 0) == 0 }

            for text in ["one", "two", "three"] { _ = try await alice.messenger.send(text, to: toBob) }
            try await waitUntil { try await bob.history(with: alice.messenger.me).count == 3 }
            // Stored and shown, held behind one wait of 100 ms: the relay still has all three.
            // (Shown once committed, held a moment later.)
            try await waitUntil { bob.heldAcknowledgements.count == 3 }
            #expect(await acknowledging.pending == 1)
            #expect(await acknowledging.requested.last == .milliseconds(100))
            let storedThrough = bob.store.commitCounts.count
            #expect(try await bobUser.mailboxEntries(after: 0) == 3)

            await acknowledging.release()
            try await waitUntil { try await bobUser.mailboxEntries(after: 0) == 0 }
            #expect(bob.heldAcknowledgements.count == 0)
            // Synced before they were acknowledged.
            #expect(bob.store.commitCounts.synced >= storedThrough)

            // One more, and the stream closed while it is held: closing acknowledges it.
            _ = try await alice.messenger.send("four", to: toBob)
            try await waitUntil { try await bob.history(with: alice.messenger.me).count == 4 }
            try await waitUntil { await acknowledging.pending == 1 }
            #expect(try await bobUser.mailboxEntries(after: 0) == 1)
            await bob.stopLive()
            #expect(bob.heldAcknowledgements.count == 0)
            try await waitUntil { try await bobUser.mailboxEntries(after: 0) == 0 }
            await acknowledging.release()
            await receipts.release()
        }
    }

    @Test(
        "what a process stored and did not live to acknowledge is acknowledged by the next messenger's first connection, not delivered again"
    )
    func strandedAcknowledged() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            for text in ["one", "two"] { _ = try await alice.messenger.send(text, to: toBob) }
            // Stored by "a process" that dies before it acknowledges: received, never acknowledged.
            let entries = try await bob.mailbox()
            #expect(entries.count == 2)
            let received = try await bob.messenger.receiver.receiveUnsynced(entries)
            #expect(received.stored.map(\.text) == ["one", "two"])
            #expect(try await bob.mailboxEntries(after: 0) == 2)
            #expect(try await bob.mailboxEntries() == 0)

            let next = await bob.reopened()
            #expect(await next.goLive())
            try await waitUntil { try await bob.mailboxEntries(after: 0) == 0 }
            #expect(try await next.history(with: alice.messenger.me).count == 2)
            await next.stopLive()
        }
    }
}
