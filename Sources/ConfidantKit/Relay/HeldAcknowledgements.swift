import ConfidantAPI
import Foundation
import Synchronization

/// Entries the live stream stored and has not acknowledged yet, and the store's commit that holds
/// the last of them: acknowledged together `delay` after the first, after one sync to disk for
/// all of them, instead of a sync and an acknowledgement for each batch. The relay keeps an entry
/// until it is acknowledged, and the receiver's clock is nobody's wait: what matters to the
/// sender (the receipt) and to the user (the message on screen) does not wait for this. Kept
/// across connections: what a dropped connection could not acknowledge goes on the next one;
/// `Messenger.stopLive` has it go before it closes. What a process that died held is found on the
/// relay by the next messenger's first connection (`MessageReceiver.unacknowledged`).
final class HeldAcknowledgements: Sendable {
    /// The most cursors one acknowledgement carries (the relay's limit).
    static let frameLimit = 1_000

    /// How long the first entry held waits for others: long enough that at a person's pace (50
    /// messages a second) several share one timer, sync, frame and delete on the relay.
    let delay: Duration
    /// Waits out the delay; tests wait for their own release instead.
    let sleep: @Sendable (Duration) async throws -> Void

    private struct State {
        var cursors: [Int64] = []
        var commit: UInt64 = 0
        var inbox: FrameInbox?
        var waiters: [CheckedContinuation<Void, Never>] = []
        var swept = false
    }
    private let state = Mutex(State())

    init(
        delay: Duration = .milliseconds(100),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.delay = delay
        self.sleep = sleep
    }

    /// How many cursors are held.
    var count: Int { state.withLock { $0.cursors.count } }

    /// Whether to look for what an earlier process left unacknowledged: until it was done once.
    var needsSweep: Bool { state.withLock { !$0.swept } }

    /// Holds what the sweep found (on disk already: `MessageReceiver.unacknowledged` synced it).
    func swept(holding cursors: [Int64]) {
        state.withLock { state in
            state.swept = true
            state.cursors += cursors
        }
    }

    /// Holds `cursors`, stored by `commit`; answers how many are held now.
    func hold(_ cursors: [Int64], commit: UInt64) -> Int {
        state.withLock { state in
            state.cursors += cursors
            state.commit = max(state.commit, commit)
            return state.cursors.count
        }
    }

    /// Up to a frame's worth of cursors, oldest first, with the commit to sync before they go.
    func take() -> (cursors: [Int64], commit: UInt64)? {
        state.withLock { state in
            guard !state.cursors.isEmpty else { return nil }
            let cursors = Array(state.cursors.prefix(Self.frameLimit))
            state.cursors.removeFirst(cursors.count)
            return (cursors, state.commit)
        }
    }

    func giveBack(_ cursors: [Int64], commit: UInt64) {
        state.withLock { state in
            state.cursors = cursors + state.cursors
            state.commit = max(state.commit, commit)
        }
    }

    func attach(_ inbox: FrameInbox) {
        state.withLock { $0.inbox = inbox }
    }

    /// The connection ended: nobody acknowledges until the next one.
    func detach(_ inbox: FrameInbox) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.inbox === inbox else { return [] }
            state.inbox = nil
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// An attempt to acknowledge ended, gone through or not.
    func acknowledged() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Has the connection acknowledge what is held now; returns once it tried, or at once when
    /// nothing is held or nothing is connected.
    func acknowledgeNow() async {
        await withCheckedContinuation { continuation in
            let inbox = state.withLock { state -> FrameInbox? in
                guard !state.cursors.isEmpty, let inbox = state.inbox else { return nil }
                state.waiters.append(continuation)
                return inbox
            }
            guard let inbox else { return continuation.resume() }
            inbox.put(.acknowledge)
        }
    }
}
