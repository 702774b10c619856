import ConfidantCrypto
import Foundation
import Synchronization
import Testing

@testable import ConfidantServer

/// A stream's inbox: rows pushed after commit go to the stream's task, or, while the stream is
/// caught up and idle, straight to its client (`goLive`) — in cursor order, each once.
@Suite("Mailbox inbox")
struct MailboxInboxTests {
    private static let caller = Caller(userID: UUID(), deviceID: UUID(), sessionID: UUID())

    private static func rows(_ cursors: ClosedRange<Int64>) -> [AddressedEntry] {
        cursors.map {
            AddressedEntry(
                recipient: caller.address,
                entry: MailboxEntry(
                    cursor: $0, kind: .envelope, sender: caller.address, messageID: UUID(), payload: Data([1]),
                    receivedAt: Date(timeIntervalSince1970: 0)))
        }
    }

    /// A live sender that records what it was given and takes it while `accepting`.
    private final class Recorder: Sendable {
        let sent = Mutex<[Int64]>([])
        let accepting = Atomic<Bool>(true)

        var send: MailboxInbox.LiveSend {
            { entries in
                guard self.accepting.load(ordering: .sequentiallyConsistent) else { return false }
                self.sent.withLock { $0 += entries.map(\.cursor) }
                return true
            }
        }
    }

    private static func cursors(_ next: MailboxInbox.Next) -> [Int64]? {
        guard case .entries(let entries) = next else { return nil }
        return entries.map(\.cursor)
    }

    @Test("live: pushed rows go to the client at once; refused rows, a wake-up or revocation hand the work back")
    func liveAndBack() {
        let hub = MailboxHub()
        let inbox = hub.subscribe(Self.caller, after: 4)
        let recorder = Recorder()
        // A new stream reads first; nothing goes live before it has.
        #expect(!inbox.goLive(recorder.send))
        #expect(Self.cursors(inbox.next()) == nil)
        #expect(inbox.sentThrough == 4)
        hub.deliver(Self.rows(5...6))
        // Rows wait: the stream takes them before it may go live.
        #expect(!inbox.goLive(recorder.send))
        #expect(Self.cursors(inbox.next()) == [5, 6])
        inbox.sent(through: 6)

        #expect(inbox.goLive(recorder.send))
        hub.deliver(Self.rows(7...8))
        hub.deliver(Self.rows(8...9))  // 8 again (a read may have had it): sent once
        #expect(recorder.sent.withLock { $0 } == [7, 8, 9])
        #expect(inbox.sentThrough == 9)
        #expect(Self.cursors(inbox.next()) == [])

        // The client falls behind: the rows wait for the stream's task, which is no longer live.
        recorder.accepting.store(false, ordering: .sequentiallyConsistent)
        hub.deliver(Self.rows(10...10))
        recorder.accepting.store(true, ordering: .sequentiallyConsistent)
        hub.deliver(Self.rows(11...11))
        #expect(recorder.sent.withLock { $0 } == [7, 8, 9])
        #expect(Self.cursors(inbox.next()) == [10, 11])
        inbox.sent(through: 11)

        // A wake-up (another instance wrote) means a read, and ends live sending.
        #expect(inbox.goLive(recorder.send))
        hub.wake([Self.caller.address])
        hub.deliver(Self.rows(12...12))
        #expect(recorder.sent.withLock { $0 } == [7, 8, 9])
        #expect(Self.cursors(inbox.next()) == nil)

        // A revoked session sends nothing more, live or not.
        #expect(inbox.goLive(recorder.send))
        hub.revoke(Revocation.session(Self.caller.sessionID))
        hub.deliver(Self.rows(13...13))
        #expect(!inbox.goLive(recorder.send))
        #expect(recorder.sent.withLock { $0 } == [7, 8, 9])
    }

    /// PostgreSQL hands a transaction's rows over with the greatest cursor each device had before
    /// them (`MailboxHandOver`): a stream that has sent or holds that cursor takes them, live or
    /// not; one that has not (an entry in between came from another instance, or from a write
    /// whose hand-over has not arrived) reads instead, so that it skips nothing.
    @Test("hand-over after a PostgreSQL commit: taken by a stream that has what came before, else a read")
    func handOverNeedsWhatCameBefore() {
        let hub = MailboxHub()
        let address = Self.caller.address
        let inbox = hub.subscribe(Self.caller, after: 4)
        let recorder = Recorder()
        #expect(Self.cursors(inbox.next()) == nil)

        // Nothing before cursor 4 was missed (the device's previous greatest is 3, deleted since
        // or sent): taken.
        hub.deliver(Self.rows(5...6), following: [address: 3])
        #expect(Self.cursors(inbox.next()) == [5, 6])
        inbox.sent(through: 6)
        // Rows it holds count as had: 7 follows 6 (sent), 8 follows 7 (held, not yet sent).
        hub.deliver(Self.rows(7...7), following: [address: 6])
        hub.deliver(Self.rows(8...8), following: [address: 7])
        #expect(Self.cursors(inbox.next()) == [7, 8])
        inbox.sent(through: 8)

        // Live: taken at once when it follows what was sent.
        #expect(inbox.goLive(recorder.send))
        hub.deliver(Self.rows(9...10), following: [address: 8])
        #expect(recorder.sent.withLock { $0 } == [9, 10])

        // Cursor 11 (another instance's, its notice not here yet) is between: a read, not live.
        hub.deliver(Self.rows(12...12), following: [address: 11])
        #expect(recorder.sent.withLock { $0 } == [9, 10])
        #expect(Self.cursors(inbox.next()) == nil)
        // Until the read is done, rows that follow one it has not sent are not taken either.
        hub.deliver(Self.rows(13...13), following: [address: 12])
        #expect(Self.cursors(inbox.next()) == nil)
        inbox.sent(through: 13)

        // Another device's bounds do not apply; without a bound (SQLite) rows are taken.
        hub.deliver(Self.rows(14...14), following: [DeviceAddress(userID: UUID(), deviceID: UUID()): 100])
        hub.deliver(Self.rows(15...15))
        #expect(Self.cursors(inbox.next()) == [14, 15])
        hub.unsubscribe(inbox)
    }

    /// Each notice used to wrap the stream's handler in two more reabstraction thunks (a closure
    /// in a tuple held by a `Mutex`), so a long-lived stream's every wake-up walked all of them
    /// and would in the end overflow the stack. The handler is called through as many frames
    /// the fiftieth time as the first.
    @Test("a notice reaches the stream's handler through the same frames every time")
    func noticesDoNotWrapTheHandler() {
        let hub = MailboxHub()
        let inbox = hub.subscribe(Self.caller)
        let depths = Mutex<[Int]>([])
        inbox.notify { notice in
            guard case .ready = notice else { return }
            let depth = Thread.callStackReturnAddresses.count
            depths.withLock { $0.append(depth) }
        }
        for _ in 0..<50 { hub.wake([Self.caller.address]) }
        let seen = depths.withLock { $0 }
        #expect(seen.count == 50)
        #expect(Set(seen).count == 1, "stack depths at each notice: \(seen)")
        hub.unsubscribe(inbox)
    }
}
