import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

@Suite("The outbox under faults")
struct OutboxRetryTests {
    /// A relay with Alice and Bob that can go away and come back on the same port with the
    /// same files (as after a crash and a restart).
    final class Outage: @unchecked Sendable {
        // @unchecked: `second` is set once by the test's own task before anything reads it.
        let first: TestRelay
        let alice: KitUser
        let bob: KitUser
        private var second: TestRelay?

        init() async throws {
            first = try await TestRelay.start()
            alice = try await KitUser.register(first, name: "Alice")
            bob = try await KitUser.register(first, name: "Bob")
        }

        func stop() async { await first.server.shutdown() }

        func restart() async throws {
            let (directory, port) = (first.directory, first.port)
            second = try await TestRelay.start(
                adjust: {
                    $0 = ServerConfiguration.embedded(dataDirectory: directory)
                    $0.port = port
                    $0.useTestingSecurityParameters()
                })
        }

        func remove() {
            let (alice, bob, second) = (alice, bob, second)
            Task {
                await alice.remove()
                await bob.remove()
                await second?.stop()
            }
        }
    }

    @Test(
        "while the relay is down messages wait in order, tried again by themselves with growing back-off; once it is back they all go, before a newer one, exactly once"
    )
    func backOffAndOrder() async throws {
        let outage = try await Outage()
        let (alice, bob, toBob) = (outage.alice, outage.bob, await outage.bob.contact)
        defer { outage.remove() }
        let clock = ManualClock()
        let sleeper = ManualSleeper()
        var policy = RetryPolicy()
        policy.random = { _ in 1.0 }
        policy.sleep = sleeper.sleep
        let sender = Messenger(
            identity: alice.messenger.identity, account: await alice.messenger.account, store: alice.messenger.store,
            retry: policy, now: clock.now)
        _ = try await sender.send("before the outage", to: toBob)

        // The relay goes away (its files stay, as after a crash).
        await outage.stop()
        var waiting: [ChatMessage] = []
        for index in 1...3 { waiting.append(try await sender.send("written while it was down \(index)", to: toBob)) }
        #expect(waiting.map(\.status) == [.pending, .pending, .pending])
        // Each attempt of the head waited twice as long as the one before: 2 s, 4 s, 8 s.
        for _ in 0..<500 {
            if await sleeper.pending >= 3 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        let delays = await sleeper.requested
        #expect(delays == [.seconds(2), .seconds(4), .seconds(8)], "\(delays)")
        let pending = try await sender.history(with: toBob.id, limit: 10).filter { $0.status == .pending }
        #expect(pending.count == 3)
        #expect(pending.allSatisfy { $0.retryAt != nil && $0.waitingReason?.contains("cannot reach") == true })

        // Back on the same port with the same files: the scheduled attempt delivers them all.
        try await outage.restart()
        await sleeper.release()
        for _ in 0..<200 {
            if try await sender.history(with: toBob.id, limit: 10).allSatisfy({ $0.status != .pending }) { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(try await sender.history(with: toBob.id, limit: 10).map(\.status).allSatisfy { $0 == .sent })
        _ = try await sender.send("after the outage", to: toBob)
        let received = try await bob.messenger.sync().map(\.text)
        #expect(
            received == [
                "before the outage", "written while it was down 1", "written while it was down 2",
                "written while it was down 3", "after the outage",
            ])
        #expect(try await bob.messenger.sync().isEmpty, "exactly once")
    }

    @Test("a send after the relay is back delivers what waited first, in the order it was written")
    func newSendGoesLast() async throws {
        let outage = try await Outage()
        let (alice, bob, toBob) = (outage.alice, outage.bob, await outage.bob.contact)
        defer { outage.remove() }
        var policy = RetryPolicy()
        let sleeper = ManualSleeper()
        policy.sleep = sleeper.sleep  // never released: only the next send delivers
        let sender = Messenger(
            identity: alice.messenger.identity, account: await alice.messenger.account, store: alice.messenger.store,
            retry: policy)
        await outage.stop()
        for index in 1...20 { _ = try await sender.send("queued \(index)", to: toBob) }
        try await outage.restart()
        #expect(try await sender.send("the newest", to: toBob).status == .sent)
        let received = try await bob.messenger.sync().map(\.text)
        #expect(received == (1...20).map { "queued \($0)" } + ["the newest"])
    }
}
