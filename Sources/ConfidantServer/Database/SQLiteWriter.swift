import Foundation
import NIOPosix
import Synchronization
import VaporCSQLite

/// The relay's own SQLite write connection and the one thread it runs on: a whole write
/// transaction is one trip to that thread (see `SQLiteWriteConnection`), or none for work that
/// runs there already (`submit`). Opened on first use, and again after a failure that left it
/// inside a transaction.
final class SQLiteWriter: Sendable {
    private let path: String
    private let pragmas: [String]
    private let busyTimeoutMilliseconds: Int
    private let gate: WriteGate
    private let logLimitFrames: Int
    private let thread = NIOThreadPool(numberOfThreads: 1)
    private let slot = ConnectionSlot()
    /// Held by whoever uses the connection: a work item on `thread`, or a caller that found it
    /// idle (`runIfIdle`). Guards `slot`.
    private let occupancy = Mutex(())
    /// Checkpoints under way, and whether the log may be copied back whole since this
    /// connection last wrote to it. In either case the next write may start the log over, and
    /// that write syncs the log's new header (`fsync`, 4.5 ms in a trace and far longer on a
    /// busy disk), which must not hold up an event loop: `runIfIdle` leaves it to the thread.
    /// Unknown at first (a new connection), so the thread writes first.
    private let logState = Mutex<(checkpoints: Int, copiedWhole: Bool)>((0, true))

    /// Only touched while holding `occupancy`, one user at a time.
    private final class ConnectionSlot: @unchecked Sendable {
        var connection: SQLiteWriteConnection? {
            didSet { checkpointedAt = 0 }
        }
        /// The log's length when this connection last checkpointed it.
        var checkpointedAt = 0
    }

    /// The write connection's own pragmas, besides every write connection's
    /// (`WriteConnectionSetup.pragmas`): foreign keys checked, as on Fluent's connections; and a
    /// page cache of 32 MiB instead of 2 MiB, since a group commit dirties a leaf page of each
    /// index per mailbox and sender it touches, and a smaller cache spilled them to the log
    /// before the commit and read them back from the file.
    /// And a log that grew while something kept it from starting over (a long read) is cut
    /// back to 64 MiB once it does.
    static let pragmas = [
        "PRAGMA foreign_keys=ON", "PRAGMA cache_size=-32768", "PRAGMA journal_size_limit=\(64 << 20)",
    ]

    /// Frames (pages) the write-ahead log may hold before this connection checkpoints it itself
    /// (`OnThread.write`): 16 MiB.
    static let logLimitFrames = 4096

    /// `gate`: the relay's one-writer-at-a-time gate, which every transaction here takes.
    /// `logLimitFrames`: see `SQLiteWriter.logLimitFrames`.
    init(
        path: String, pragmas: [String], busyTimeoutMilliseconds: Int, gate: WriteGate,
        logLimitFrames: Int = SQLiteWriter.logLimitFrames
    ) {
        self.path = path
        self.pragmas = pragmas
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.gate = gate
        self.logLimitFrames = logLimitFrames
        thread.start()
    }

    /// Being on the write connection's thread, where work handed to `submit` runs: only there
    /// may a transaction run without a trip.
    struct OnThread: ~Copyable {
        fileprivate let writer: SQLiteWriter
        /// False once the thread has stopped: work handed over then runs where it was handed
        /// over, and every write fails.
        fileprivate let running: Bool
        /// On the caller's own thread (`runIfIdle`), which must not wait: a write fails with
        /// `SQLiteWriter.WouldWait` instead of waiting for the gate or for SQLite's lock.
        fileprivate var inline = false

        /// Runs `body` inside `BEGIN IMMEDIATE` … `COMMIT`, holding the gate; rolls back when it
        /// throws. `committed` runs after the commit and before the next writer starts.
        ///
        /// After that, a log longer than `logLimitFrames` is checkpointed here. The relay's
        /// background checkpoints (`WALCheckpoints`) copy the log while writes go on, but SQLite
        /// starts the log over only when a write begins with all of it copied. Under steady load
        /// a commit always lands while a checkpoint runs, so the log never started over: it grew
        /// by every page written (100 MB a second with one message in flight), each commit
        /// allocating new file blocks. Here no write can land in between, and the background
        /// checkpoints have usually copied all but the last few commits.
        func write<T>(_ body: (SQLiteWriteConnection) throws -> T, committed: (T) -> Void = { _ in }) throws -> T {
            guard running else { throw SQLiteWriter.shuttingDown }
            if inline {
                guard writer.gate.acquireIfFree() else { throw SQLiteWriter.WouldWait() }
            } else {
                writer.gate.acquireBlocking()
            }
            let result: T
            do {
                result = try inline ? writer.runWithoutWaiting(body) : writer.run(body)
            } catch {
                writer.gate.release()
                throw error
            }
            committed(result)
            writer.gate.release()
            // Not on an event loop: a log over the limit sends the next write to the thread.
            if !inline { writer.checkpointIfLong() }
            return result
        }
    }

    /// Runs `work` on the write connection's thread, after the work handed over before it. Once
    /// the thread has stopped, `work` still runs (on the caller's thread), and its writes fail:
    /// whoever waits on it hears so instead of waiting forever.
    func submit(_ work: @escaping @Sendable (borrowing OnThread) -> Void) {
        thread.submit { [self] state in
            guard case .active = state else { return work(OnThread(writer: self, running: false)) }
            occupancy.withLock { _ in perform(work, inline: false) }
        }
    }

    /// `work` with the connection, holding `occupancy`. Not inlined: Swift 6.3's optimizer
    /// crashed (signal 6, EarlyPerfInliner) inlining a `Mutex` closure that makes an `OnThread`.
    @inline(never)
    private func perform(_ work: (borrowing OnThread) -> Void, inline: Bool) {
        var onThread = OnThread(writer: self, running: true)
        onThread.inline = inline
        work(onThread)
    }

    /// `OnThread.write` holding `occupancy`; not inlined, as `perform`.
    @inline(never)
    private func performWrite<T>(_ body: (SQLiteWriteConnection) throws -> T) -> Result<T, any Error> {
        Result { try OnThread(writer: self, running: true).write(body) }
    }

    /// Runs `work` at once on the caller's thread (a connection's event loop) when that costs
    /// no wait: nobody uses the connection, it is open, and its log is under the limit (so no
    /// checkpoint runs here). A stream's sends then skip the hand-over to the write thread and
    /// back, two thread wake-ups per message. A write in `work` that would wait fails with `WouldWait`, having
    /// written nothing; the caller then hands the work to the thread.
    /// - Returns: false, without running `work`, when it would have to wait.
    func runIfIdle(_ work: (borrowing OnThread) -> Void) -> Bool {
        let ran = occupancy.withLockIfAvailable { _ -> Bool in
            guard let connection = slot.connection, connection.logFrames <= logLimitFrames,
                !logMayStartOver
            else { return false }
            perform(work, inline: true)
            return true
        }
        return ran ?? false
    }

    static let shuttingDown = SQLiteStatementFailure(code: SQLITE_MISUSE, message: "The relay is shutting down.")

    /// A write on the caller's thread that would have waited (`runIfIdle`): nothing was written.
    struct WouldWait: Error {}

    /// `OnThread.write` from anywhere: one trip to the thread and back.
    func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteWriteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            thread.submit { [self] state in
                guard case .active = state else { return continuation.resume(throwing: Self.shuttingDown) }
                let result = occupancy.withLock { _ in performWrite(body) }
                continuation.resume(with: result)
            }
        }
    }

    /// Whether the next write may start the log over (`logState`).
    var logMayStartOver: Bool {
        logState.withLock { $0.checkpoints > 0 || $0.copiedWhole }
    }

    /// A checkpoint of the file on another connection (`WALCheckpoints`) starts: until it ends,
    /// writes may start the log over.
    func checkpointStarted() {
        logState.withLock { $0.checkpoints += 1 }
    }

    /// That checkpoint ended; `copiedWhole`: it copied every frame of the log back.
    func checkpointEnded(copiedWhole: Bool) {
        logState.withLock {
            $0.checkpoints -= 1
            if copiedWhole { $0.copiedWhole = true }
        }
    }

    /// A checkpoint once the log is over its limit; while a reader keeps it from starting over,
    /// again only after another quarter of the limit, not after every commit.
    private func checkpointIfLong() {
        guard let connection = slot.connection else { return }
        let frames = connection.logFrames
        if frames < slot.checkpointedAt { slot.checkpointedAt = 0 }
        guard frames > logLimitFrames, frames >= slot.checkpointedAt + logLimitFrames / 4 else { return }
        slot.checkpointedAt = frames
        if connection.checkpoint() { logState.withLock { $0.copiedWhole = true } }
    }

    /// `run` without waiting for SQLite's lock, which another process may hold (a backup, a
    /// `sqlite3` shell): a busy database fails `WouldWait`, rolled back.
    private func runWithoutWaiting<T>(_ body: (SQLiteWriteConnection) throws -> T) throws -> T {
        guard let connection = slot.connection else { throw WouldWait() }
        connection.waitForLocks(milliseconds: 0)
        defer { connection.waitForLocks(milliseconds: busyTimeoutMilliseconds) }
        do {
            return try run(body)
        } catch let failure as SQLiteStatementFailure where failure.primaryCode == SQLITE_BUSY {
            throw WouldWait()
        }
    }

    private func run<T>(_ body: (SQLiteWriteConnection) throws -> T) throws -> T {
        let connection: SQLiteWriteConnection
        if let open = slot.connection {
            connection = open
        } else {
            connection = try SQLiteWriteConnection(
                path: path, pragmas: pragmas, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
            slot.connection = connection
            logState.withLock { $0.copiedWhole = true }
        }
        do {
            let logged = connection.loggedCommits
            let result = try connection.transaction { try body(connection) }
            // Written to the log: whether or not that started it over, the next write does not.
            if connection.loggedCommits != logged { logState.withLock { $0.copiedWhole = false } }
            return result
        } catch {
            // A rollback that failed too (a vanished disk) leaves the connection in a transaction:
            // the next write starts on a new one.
            if connection.inTransaction { slot.connection = nil }
            throw error
        }
    }

    /// Closes the connection and stops the thread; writes after this fail.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            thread.submit { [self] _ in
                occupancy.withLock { _ in slot.connection = nil }
                continuation.resume()
            }
        }
        try? await thread.shutdownGracefully()
    }
}
