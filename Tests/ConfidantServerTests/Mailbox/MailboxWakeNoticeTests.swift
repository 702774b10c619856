import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import ConfidantServer

/// The NOTIFY payloads instances wake each other's streams with, and the listener that ignores
/// its own instance's.
@Suite("Mailbox wake notices")
struct MailboxWakeNoticeTests {
    private static func addresses(_ count: Int) -> [DeviceAddress] {
        (0..<count).map { _ in DeviceAddress(userID: UUID(), deviceID: UUID()) }
    }

    @Test("payloads carry every address and the writer, each under PostgreSQL's 8,000 bytes")
    func payloadsRoundTrip() {
        let instance = UUID()
        let all = Self.addresses(250)
        let payloads = MailboxWakeNotice.payloads(for: all, from: instance)
        #expect(payloads.count == 3)
        #expect(payloads.allSatisfy { $0.utf8.count < 8000 })
        let notices = payloads.map(MailboxWakeNotice.init(payload:))
        #expect(notices.flatMap(\.addresses) == all)
        #expect(notices.allSatisfy { $0.from == instance })
        #expect(MailboxWakeNotice.payloads(for: [], from: instance).isEmpty)
    }

    @Test("a payload without the writer (an older instance's) still wakes its addresses; other parts are skipped")
    func olderAndMalformedPayloads() {
        let two = Self.addresses(2)
        let older = MailboxWakeNotice(payload: two.map(\.description).joined(separator: ","))
        #expect(older == MailboxWakeNotice(payload: "\(two[0]),\(two[1])"))
        #expect(older.addresses == two && older.from == nil)

        let odd = MailboxWakeNotice(payload: "\(two[0]),,nonsense,from not-a-uuid,\(two[1]):extra")
        #expect(odd.addresses == [two[0]])
        #expect(odd.from == nil)
        #expect(MailboxWakeNotice(payload: "").addresses.isEmpty)
    }

    /// Own notices come back to the writer's listener after it woke its streams itself; the
    /// listener must skip them (each would make every woken stream read its mailbox again) and
    /// still wake streams for everyone else's. Notices from one session arrive in the order they
    /// were sent, so once the other instance's notice has woken its stream, this instance's,
    /// sent just before it, has been handled.
    @Test(
        "the listener wakes streams for other instances' notices and skips its own")
    func listenerSkipsOwnNotices() async throws {
        let url = try Prerequisite.postgresCluster()
        let hub = MailboxHub()
        let listener = PostgresMailboxListener(
            configuration: try #require(PostgresAdmin.configuration(url: url)), hub: hub,
            sessions: SessionCache(), logger: Logger(label: "test.listener"))
        let mine = Caller(userID: UUID(), deviceID: UUID(), sessionID: UUID())
        let theirs = Caller(userID: UUID(), deviceID: UUID(), sessionID: UUID())
        let wakes = Mutex<(mine: Int, theirs: Int)>((0, 0))
        let myInbox = hub.subscribe(mine)
        let theirInbox = hub.subscribe(theirs)
        myInbox.notify { if case .ready = $0 { wakes.withLock { $0.mine += 1 } } }
        theirInbox.notify { if case .ready = $0 { wakes.withLock { $0.theirs += 1 } } }
        listener.start()
        defer {
            listener.stop()
            hub.finishAll()
        }

        let notify = { (address: DeviceAddress, instance: UUID) async throws in
            let payload = try #require(MailboxWakeNotice.payloads(for: [address], from: instance).first)
            // The payload is addresses, hex and "from ": nothing to quote.
            try await PostgresAdmin.run(
                url: url, "SELECT pg_notify('\(PostgresMailboxListener.channel)', '\(payload)')")
        }
        // Notices sent before the listener's LISTEN took effect are lost: send theirs until one
        // arrives. Then LISTEN is in effect for a pair sent after it: mine, then theirs.
        for _ in 0..<600 where wakes.withLock({ $0.theirs }) == 0 {
            try await notify(theirs.address, UUID())
            for _ in 0..<10 where wakes.withLock({ $0.theirs }) == 0 {
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let before = wakes.withLock { $0.theirs }
        #expect(before > 0)
        try await notify(mine.address, hub.instance)
        try await notify(theirs.address, UUID())
        for _ in 0..<6000 where wakes.withLock({ $0.theirs }) == before {
            try await Task.sleep(for: .milliseconds(10))
        }
        let seen = wakes.withLock { $0 }
        #expect(seen.theirs > before)
        #expect(seen.mine == 0)
    }
}
