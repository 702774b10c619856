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
