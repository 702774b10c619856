import Foundation
import Synchronization
import Testing

@testable import ConfidantApp

@Suite("Locking the vault after a while without use")
struct VaultIdleLockTests {
    /// A clock the test moves.
    final class TestClock: Sendable {
        let time = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
        var now: Date { time.withLock { $0 } }
    }

    @Test("idle once the limit passed since the last use; a use starts it again; no limit is never idle")
    func idleness() {
        let clock = TestClock()
        let lock = VaultIdleLock(limit: .seconds(15 * 60), now: { clock.now })
        clock.advance(14 * 60 + 59)
        #expect(!lock.isIdle)
        clock.advance(1)
        #expect(lock.isIdle)
        lock.used()
        #expect(!lock.isIdle)
        clock.advance(15 * 60)
        #expect(lock.isIdle)
        #expect(lock.checkInterval == .seconds(30))
        #expect(VaultIdleLock(limit: .seconds(5)).checkInterval == .seconds(1))

        let never = VaultIdleLock(limit: nil, now: { clock.now })
        clock.advance(1_000_000)
        #expect(!never.isIdle)
    }

    @Test("pages and forms are use; the streams and assets a tab fetches by itself are not")
    func whatCounts() {
        for path in ["/", "/vault", "/chat/x", "/vault/memories", "/search"] { #expect(VaultIdleLock.counts(path)) }
        for path in ["/live/chat/x", "/live/notifications", "/assets/app.js", "/favicon.ico"] {
            #expect(!VaultIdleLock.counts(path))
        }
    }
}
