import ConfidantTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConfidantServer

/// A stream runs tasks only while it has work: its catch-up, frames it cannot take at once, news
/// it cannot send live. An idle stream holds none (each kept its memory for as long as it lived).
@Suite("Stream sessions")
struct StreamSessionTests {
    /// Whether the relay's stream tasks come down to none within a generous bound (they end as
    /// soon as their work is done; the bound only keeps a broken build from hanging).
    private static func settles(_ hub: MailboxHub) async -> Bool {
        for _ in 0..<600 {
            if hub.streamTasks.load(ordering: .relaxed) == 0 { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    @Test(
        "after the catch-up, a live delivery and an acknowledgement an idle stream holds no task, and still takes news",
        arguments: TestDatabaseKind.allCases)
    func idleStreamHoldsNoTask(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let bobDevices = [(bob.address, bob.identity.publicIdentity)]
            for index in 0..<2 { _ = try await alice.send("stored \(index)", to: bobDevices) }
            let stream = try await StreamClient.connect(port: relay.port, user: bob)
            let replay = await stream.frames.next(3)
            #expect(replay.compactMap(\.entry).count == 2 && replay.last?.caughtUp == true)
            _ = try await alice.send("live", to: bobDevices)
            let live = await stream.frames.next(1).compactMap(\.entry)
            #expect(live.count == 1)
            try await stream.acknowledge((replay.compactMap(\.entry) + live).map(\.cursor))
            #expect(await Self.settles(relay.server.hub))

            // Idle, it still takes news.
            _ = try await alice.send("after idling", to: bobDevices)
            #expect(await stream.frames.next(1).compactMap(\.entry).count == 1)
            #expect(await Self.settles(relay.server.hub))
            await stream.close()
            #expect(await Self.settles(relay.server.hub))
        }
    }
}
