import Foundation
import Synchronization

/// A wall clock that moves only when a test says so: throttle windows, lock-outs and expiries
/// are then tested without sleeping, however slow the machine is.
package final class ManualClock: Sendable {
    private let current: Mutex<Date>

    package init(_ start: Date = Date()) {
        current = Mutex(start)
    }

    /// For `ServerConfiguration.now`.
    package var now: @Sendable () -> Date { { self.current.withLock { $0 } } }

    package func advance(by seconds: TimeInterval) {
        current.withLock { $0.addTimeInterval(seconds) }
    }
}

/// Stands in for `Task.sleep` where code waits before trying again: records each delay asked for
/// and returns only when the test releases it, so back-off is tested without waiting.
package actor ManualSleeper {
    package private(set) var requested: [Duration] = []
    private var waiting: [CheckedContinuation<Void, any Error>] = []

    package init() {}

    /// For `RetryPolicy.sleep`.
    package nonisolated var sleep: @Sendable (Duration) async throws -> Void {
        { duration in try await self.wait(duration) }
    }

    private func wait(_ duration: Duration) async throws {
        requested.append(duration)
        try await withCheckedThrowingContinuation { waiting.append($0) }
    }

    /// Ends every wait under way.
    package func release() {
        let released = waiting
        waiting = []
        for continuation in released { continuation.resume() }
    }

    /// How many waits are under way.
    package var pending: Int { waiting.count }
}
