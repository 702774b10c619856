import Foundation

/// New messages handed to a running window of sends (`OutboxDrain.handOver(_:)`), queued by the
/// window in one transaction instead of one each, and each sender's answer until it asks.
struct WindowHandOver {
    /// Whether a window of sends runs (`StreamWindow`): a new message is then handed to it.
    var windowRunning = false
    /// Whether the outbox may hold messages this process queued that the running window has not
    /// read: set by a delivery asked for while one runs (its caller queued the message itself).
    /// While it is not set, all that is new is what was handed over, which the window takes
    /// without reading the outbox.
    var queuedOutsideWindow = true
    /// Handed over and not yet queued, in the order handed over.
    private var handed: [LocalStore.NewQueued] = []
    /// How queueing went for a message handed over, kept until its sender asks, or given to the
    /// sender already waiting.
    private var results: [UUID: Result<OutboxDrain.QueuedNew, any Error>] = [:]
    private var waiters: [UUID: CheckedContinuation<OutboxDrain.QueuedNew, any Error>] = [:]

    var count: Int { handed.count }

    mutating func add(_ new: LocalStore.NewQueued) {
        handed.append(new)
    }

    mutating func takeResult(for id: UUID) -> Result<OutboxDrain.QueuedNew, any Error>? {
        results.removeValue(forKey: id)
    }

    mutating func wait(for id: UUID, _ continuation: CheckedContinuation<OutboxDrain.QueuedNew, any Error>) {
        waiters[id] = continuation
    }

    /// Queues everything handed over in one transaction and answers each sender: stored, or
    /// ``SendingContexts/Stale`` for a message built on a context that changed, or the store's
    /// error for all. Returns those queued, as the outbox has them, in order.
    mutating func queueAll(in store: LocalStore) -> [LocalStore.QueuedMessage] {
        let taken = handed
        handed = []
        var queued: [LocalStore.QueuedMessage] = []
        let answers: [Result<OutboxDrain.QueuedNew, any Error>]
        do {
            let (stored, commit) = try store.queue(taken)
            answers = zip(taken, stored).map { new, stored in
                guard let stored else { return .failure(SendingContexts.Stale()) }
                queued.append(LocalStore.QueuedMessage(justQueued: stored, confirmed: new.confirmed))
                return .success((stored, commit, nil))
            }
        } catch {
            answers = taken.map { _ in .failure(error) }
        }
        for (new, answer) in zip(taken, answers) {
            if let waiter = waiters.removeValue(forKey: new.message.id) {
                waiter.resume(with: answer)
            } else {
                results[new.message.id] = answer
            }
        }
        return queued
    }
}

extension OutboxDrain {
    /// Queues a new message through the running window of sends, with the others handed over
    /// meanwhile, in one transaction (`queueHandedOver`), instead of in one of its own. It comes
    /// back as `LocalStore.queue` would have: stored and queued, or refused with
    /// ``SendingContexts/Stale`` or the store's error, nothing written for it.
    func handOver(_ new: LocalStore.NewQueued) async throws -> QueuedNew {
        let id = new.message.id
        handOvers.add(new)
        diagnostics?.update { [count = handOvers.count] in $0.handedOver = count }
        drainAgain = true
        // A window waiting for its oldest answer queues it at once if it has room; else at its
        // next refill, or as it ends.
        await stream.nudge()
        if let settled = handOvers.takeResult(for: id) { return try settled.get() }
        return try await withCheckedThrowingContinuation { handOvers.wait(for: id, $0) }
    }

    /// Queues the messages handed over, in one transaction, and answers their senders. Returns
    /// those queued, as the outbox has them, in order.
    @discardableResult
    func queueHandedOver() -> [LocalStore.QueuedMessage] {
        guard handOvers.count > 0 else { return [] }
        let queued = handOvers.queueAll(in: store)
        diagnostics?.update {
            $0.queuedByWindows += queued.count
            $0.handedOver = 0
        }
        return queued
    }
}
