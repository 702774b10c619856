import Foundation
import Synchronization

/// When the receipts for messages that arrive on the live stream go: after a short wait, so that
/// those of everything arriving meanwhile go as one sealed receipt (`ControlRun`) instead of one
/// each, as Signal's clients batch theirs: a receipt costs a Double Ratchet step and a synced
/// commit on both sides and a message through the relay.
///
/// Receipts queued by `Messenger.sync` go at once, and so do those that a delivery starting
/// sooner (a send, a chat marked read) takes along; `stopLive` sends those still held.
struct ReceiptBatching: Sendable {
    /// How long the first receipt held waits for others: short enough that the sender sees its
    /// message delivered at once, to a person's eye.
    var delay: Duration = .milliseconds(250)
    /// Waits out the delay; tests wait for their own release instead.
    var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

    /// How long closing waits for the held receipts to go before it closes the connection anyway
    /// (they stay queued, for the next delivery).
    static let closingLimit: Duration = .seconds(2)

    /// Waits until `work` ends or `limit` has passed, whichever is first; `work` goes on by itself
    /// after that. Not a task group: that would wait for `work` however long it took.
    static func wait(atMost limit: Duration, for work: Task<Void, Never>) async {
        let waiter = FirstOfTwo()
        let timer = Task {
            try? await Task.sleep(for: limit)
            waiter.end()
        }
        Task {
            await work.value
            waiter.end()
        }
        await withCheckedContinuation { waiter.wait($0) }
        timer.cancel()
    }
}

/// A continuation resumed by whichever of two tasks ends first, once, even when that one ends
/// before anyone waits.
private final class FirstOfTwo: Sendable {
    private let state = Mutex<(waiting: CheckedContinuation<Void, Never>?, ended: Bool)>((nil, false))

    func wait(_ continuation: CheckedContinuation<Void, Never>) {
        let endedAlready = state.withLock { state in
            if !state.ended { state.waiting = continuation }
            return state.ended
        }
        if endedAlready { continuation.resume() }
    }

    func end() {
        let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.ended else { return nil }
            state.ended = true
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume()
    }
}
