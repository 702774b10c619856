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
        /// What the messengers `sender(_:now:)` opens did, together.
        let diagnostics = DeliveryDiagnostics()
        private var second: TestRelay?
        private let adjust: @Sendable (inout ServerConfiguration) -> Void

        init(adjust: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in }) async throws {
            self.adjust = adjust
            first = try await TestRelay.start(adjust: adjust)
            alice = try await KitUser.register(first, name: "Alice")
            bob = try await KitUser.register(first, name: "Bob")
        }

        func stop() async { await first.server.shutdown() }

        /// Alice's profile in a messenger of its own whose automatic retries wait for `policy`.
        func sender(_ policy: RetryPolicy, now: @escaping @Sendable () -> Date = { Date() }) async -> Messenger {
            await alice.reopened(retry: policy, diagnostics: diagnostics, now: now)
        }

        /// Alice's profile in a messenger whose automatic retries never come: only the next
        /// send delivers.
        func senderWithoutRetries() async -> Messenger {
            var policy = RetryPolicy()
            policy.sleep = ManualSleeper().sleep  // never released
            return await sender(policy)
        }

        func restart() async throws {
            let (directory, port, adjust) = (first.directory, first.port, adjust)
            second = try await TestRelay.start(
                adjust: {
                    $0 = ServerConfiguration.embedded(dataDirectory: directory)
                    $0.port = port
                    $0.useTestingSecurityParameters()
                    adjust(&$0)
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
        let (bob, toBob) = (outage.bob, await outage.bob.contact)
        defer { outage.remove() }
        let clock = ManualClock()
        let sleeper = ManualSleeper()
        var policy = RetryPolicy()
        policy.random = { _ in 1.0 }
        policy.sleep = sleeper.sleep
        let sender = await outage.sender(policy, now: clock.now)
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
        let (bob, toBob) = (outage.bob, await outage.bob.contact)
        defer { outage.remove() }
        let sender = await outage.senderWithoutRetries()
        await outage.stop()
        for index in 1...20 { _ = try await sender.send("queued \(index)", to: toBob) }
        try await outage.restart()
        #expect(try await sender.send("the newest", to: toBob).status == .sent)
        let received = try await bob.messenger.sync().map(\.text)
        #expect(received == (1...20).map { "queued \($0)" } + ["the newest"])
    }

    @Test("a control message that could not go while the relay was down goes with the next send once it is back")
    func controlGoesWithTheNextSend() async throws {
        let outage = try await Outage()
        let (bob, toBob) = (outage.bob, await outage.bob.contact)
        defer { outage.remove() }
        let sender = await outage.senderWithoutRetries()
        _ = try await sender.send("before", to: toBob)
        await outage.stop()
        try await sender.setDisappearingTimer(60, with: toBob)
        #expect(try sender.store.controls().count == 1, "waiting for the relay")
        try await outage.restart()
        // Nothing new is queued: the delivery that left the timer waiting marked the queue.
        #expect(try await sender.send("after", to: toBob).status == .sent)
        try await waitUntil { try sender.store.controls().isEmpty }
        let received = try await bob.messenger.sync()
        #expect(received.compactMap(\.text) == ["before", "after", "Alice set disappearing messages to 1 min"])
        #expect(received.last?.direction == .notice)
        #expect(try await bob.messenger.disappearingTimer(with: sender.me) == 60)
    }

    @Test(
        "a backlog goes over the stream in windows of ordered sends: all arrive once and in order, at a device that signed in meanwhile too"
    )
    func windowOverTheStream() async throws {
        let outage = try await Outage()
        let (bob, toBob) = (outage.bob, await outage.bob.contact)
        defer { outage.remove() }
        var policy = RetryPolicy()
        policy.sleep = ManualSleeper().sleep  // never released: only the stream's connection delivers
        let sender = await outage.sender(policy)
        // Alice's keys for Bob are fetched now, before his tablet signs in; the relay's key
        // change entry tells her once she is live.
        _ = try await sender.send("before", to: toBob)
        try await KitUser.removing(try await bob.secondDevice(outage.first)) { tablet in
            await outage.stop()
            let count = 3 * StreamWindow.size
            for index in 1...count { _ = try await sender.send("queued \(index)", to: toBob) }
            try await outage.restart()
            try await Self.deliverLive(sender, to: toBob.id)
            let unsent = try await sender.history(with: toBob.id, limit: count + 5).filter {
                $0.direction == .outgoing && $0.status != .sent && $0.status != .delivered
            }
            #expect(unsent.isEmpty, "\(unsent.map { "\($0.text ?? "?"): \($0.status)" })")
            // "before" went over HTTP, the backlog over the stream.
            #expect(outage.diagnostics.record.transports == [.http] + Array(repeating: .stream, count: count))
            // The first starts a session with the tablet (a prekey bundle claimed) and goes alone.
            let windowed = outage.diagnostics.record.sentInWindows
            #expect(windowed == count - 1, "\(windowed)")
            let expected = (1...count).map { "queued \($0)" }
            #expect(try await bob.messenger.sync().map(\.text) == ["before"] + expected)
            #expect(try await tablet.messenger.sync().map(\.text) == expected)
        }
    }

    @Test(
        "a message the relay refuses in the middle of a window: nothing sent after it is stored before it is dealt with"
    )
    func refusalInAWindow() async throws {
        // Bob's mailbox takes 20 messages: the 21st is refused while the ones after it are on
        // their way, each naming the one before.
        let outage = try await Outage(adjust: { $0.mailboxLimit = 20 })
        let (bob, toBob) = (outage.bob, await outage.bob.contact)
        defer { outage.remove() }
        var policy = RetryPolicy()
        policy.sleep = ManualSleeper().sleep
        let sender = await outage.sender(policy)
        await outage.stop()
        for index in 1...30 { _ = try await sender.send("queued \(index)", to: toBob) }
        try await outage.restart()
        try await Self.deliverLive(sender, to: toBob.id)
        let lines = try await sender.history(with: toBob.id, limit: 40).filter { $0.direction == .outgoing }
        #expect(lines.prefix(20).allSatisfy { $0.status == .sent || $0.status == .delivered })
        #expect(
            lines.dropFirst(20).allSatisfy {
                if case .failed(.refused(.quotaExceeded, let message)) = $0.status {
                    message.contains("full")
                } else {
                    false
                }
            }, "\(lines.dropFirst(20).map(\.status))")
        // The first starts the session with Bob (a prekey bundle claimed) and goes alone.
        #expect(outage.diagnostics.record.sentInWindows == 19)
        #expect(try await bob.messenger.sync().map(\.text) == (1...20).map { "queued \($0)" })
    }

    /// Starts `sender`'s stream and stops it once nothing to `peer` is pending (or after 10 s).
    static func deliverLive(_ sender: Messenger, to peer: UUID) async throws {
        #expect(await sender.goLive())
        for _ in 0..<400 {
            if try await sender.history(with: peer, limit: 200).allSatisfy({ $0.status != .pending }) { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        await sender.stopLive()
    }
}
