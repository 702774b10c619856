import Dispatch
import Synchronization

/// One writer at a time. SQLite allows a single writer; a transaction that reads and then writes
/// can fail with SQLITE_BUSY instead of waiting when another connection writes, so the relay
/// queues its own write transactions here (PostgreSQL does not need it). Tasks wait without
/// holding a thread; the relay's own write connection (`SQLiteWriter`) waits on its thread, which
/// has nothing else to do meanwhile. Whoever waited longest goes next.
final class WriteGate: Sendable {
    private enum Waiter {
        case task(CheckedContinuation<Void, Never>)
        case thread(DispatchSemaphore)
    }

    private let state = Mutex<(busy: Bool, waiters: [Waiter])>((false, []))

    /// Waits (suspended) until the gate is free, and takes it.
    func acquire() async {
        if takeIfFree() { return }
        await withCheckedContinuation { continuation in
            if !takeIfFree(orQueue: .task(continuation)) { return }
            continuation.resume()
        }
    }

    /// Waits (blocking this thread) until the gate is free, and takes it. Only for a thread of
    /// its own, never for one of Swift's cooperative threads or an event loop.
    func acquireBlocking() {
        if takeIfFree() { return }
        let semaphore = DispatchSemaphore(value: 0)
        if !takeIfFree(orQueue: .thread(semaphore)) { semaphore.wait() }
    }

    /// Takes the gate if it is free, without waiting: for an event loop, which must not block.
    func acquireIfFree() -> Bool { takeIfFree() }

    /// How many wait for the gate now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Hands the gate to the next waiter, or leaves it free.
    func release() {
        let next = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        switch next {
        case .task(let continuation): continuation.resume()
        case .thread(let semaphore): semaphore.signal()
        case nil: break
        }
    }

    /// Takes the gate if it is free; otherwise queues `waiter` (if given) and answers false.
    private func takeIfFree(orQueue waiter: Waiter? = nil) -> Bool {
        state.withLock { state in
            if !state.busy {
                state.busy = true
                return true
            }
            if let waiter { state.waiters.append(waiter) }
            return false
        }
    }
}
