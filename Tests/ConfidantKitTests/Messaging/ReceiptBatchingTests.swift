import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

@Suite("Receipts for what arrives live, batched")
struct ReceiptBatchingTests {
    /// Bob's profile in a messenger of its own whose held receipts wait for `sleeper`.
    private static func bob(_ bob: KitUser, waitingFor sleeper: ManualSleeper) async -> Messenger {
        var batching = ReceiptBatching()
        batching.sleep = sleeper.sleep
        return await bob.reopened(receipts: batching)
    }

    @Test(
        "messages arriving live are answered by one receipt after the wait, not one each; closing sends a receipt still held"
    )
    func oneReceiptForSeveral() async throws {
        try await KitUser.pairOnRelay { relay, alice, bobUser in
            let sleeper = ManualSleeper()
            let bob = await Self.bob(bobUser, waitingFor: sleeper)
            let toBob = try await alice.messenger.contact(email: bobUser.email)
            #expect(await bob.goLive())
            // The delivery that going live starts is over before anything arrives.
            _ = try await bob.flushOutbox()

            let sent = [
                try await alice.messenger.send("one", to: toBob), try await alice.messenger.send("two", to: toBob),
                try await alice.messenger.send("three", to: toBob),
            ]
            try await waitUntil { try await bob.history(with: alice.messenger.me).count == 3 }
            // All three wait for company behind one wait of 250 ms; nothing has gone yet. (A
            // receipt is queued per batch received: one for each message that came alone.)
            try await waitUntil { await sleeper.pending == 1 }
            #expect(await sleeper.requested == [.milliseconds(250)])
            #expect((1...3).contains(try bob.store.controls().count))
            #expect(try await alice.mailboxEntries() == 0)

            await sleeper.release()
            try await waitUntil { try bob.store.controls().isEmpty }
            // One envelope names all three.
            #expect(try await alice.mailboxEntries() == 1)
            _ = try await alice.messenger.sync()
            let statuses = try await alice.messenger.history(with: toBob.id).filter {
                sent.map(\.id).contains($0.id)
            }
            .map(\.status)
            #expect(statuses == [.delivered, .delivered, .delivered], "\(statuses)")

            // One more, and the stream closed while its receipt waits: closing sends it.
            let last = try await alice.messenger.send("four", to: toBob)
            try await waitUntil { try await bob.history(with: alice.messenger.me).count == 4 }
            try await waitUntil { await sleeper.pending == 1 }
            await bob.stopLive()
            #expect(try bob.store.controls().isEmpty)
            _ = try await alice.messenger.sync()
            #expect(
                try await alice.messenger.history(with: toBob.id).first { $0.id == last.id }?.status == .delivered)
            await sleeper.release()
        }
    }

    @Test("a wait for work that outlasts its limit returns at the limit, and the work goes on by itself")
    func closingLimit() async throws {
        let sleeper = ManualSleeper()
        let work = Task { _ = try? await sleeper.sleep(.zero) }
        try await waitUntil { await sleeper.pending == 1 }
        // Should the wait wait for the work after all, this ends it after 60 s, and the check fails.
        let backstop = Task {
            try await Task.sleep(for: .seconds(60))
            await sleeper.release()
        }
        await ReceiptBatching.wait(atMost: .milliseconds(50), for: work)
        #expect(await sleeper.pending == 1, "returned while the work still waits")
        backstop.cancel()
        await sleeper.release()
        await work.value
    }
}
