/// One writer at a time. SQLite allows a single writer; a transaction that reads and then writes
/// can fail with SQLITE_BUSY instead of waiting when another connection writes, so the relay
/// queues its own write transactions here (PostgreSQL does not need it).
actor WriteGate {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }
}
