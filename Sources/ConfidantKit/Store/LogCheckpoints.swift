import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the store's write-ahead log back into the database (a checkpoint) on a queue of its
/// own, through a connection opened for it, instead of inside the commit that takes the log past
/// SQLite's threshold. SQLite's automatic checkpoint runs in that commit, on the thread that
/// committed — an event loop of the messenger — and syncs the log and the database there: with
/// one message in flight it was a third of the `fdatasync` calls made on the event loops, about
/// 1 ms each with the loop blocked (docs/BENCHMARKS.md). A checkpoint of its own connection
/// (`PASSIVE`) waits for no reader or writer; the connection that writes only starts the log over
/// once it has been copied. GRDB has no call for SQLite's log hook, so it is set here directly.
final class LogCheckpoints: Sendable {
    /// Frames in the log that start a checkpoint: SQLite's own default (`wal_autocheckpoint`).
    static let threshold: Int32 = 1_000
    /// Frames at which the committing connection checkpoints the log itself, as SQLite would:
    /// the log stays bounded should the checkpoints here fall behind (another process reading an
    /// old snapshot for long keeps them from finishing).
    static let inlineLimit: Int32 = 8 * threshold

    /// What one checkpoint found and did, for the tests.
    struct Outcome: Sendable, Equatable {
        /// Frames in the log, and frames copied into the database (all of them when it is done).
        let frames: Int32
        let copied: Int32
    }

    private let path: String
    private let queue = DispatchQueue(label: "confidant.store.checkpoint", qos: .utility)
    /// Whether a checkpoint is queued and has not started: later commits do not queue another.
    private let queued = Atomic<Bool>(false)
    /// How far into the log the last checkpoint copied: the next one is queued ``threshold``
    /// frames further on. The writer starts the log over only after a checkpoint that copied
    /// all of it, which one running beside a busy writer rarely does; ``inlineLimit`` then does.
    private let copiedThrough = Atomic<Int32>(0)
    /// Called after each checkpoint (tests).
    private let observer = Mutex<(@Sendable (Outcome) -> Void)?>(nil)

    /// - Parameter path: the database file.
    init(path: String) { self.path = path }

    /// Takes the log's checkpoints off `db`'s commits: from here on, SQLite calls ``committed``
    /// after each commit of that connection instead of checkpointing in it.
    func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        // `self` outlives the connection: the configuration's `prepareDatabase`, which the
        // `DatabaseQueue` keeps, holds it.
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, _, frames in
                guard let context else { return SQLITE_OK }
                let checkpoints = Unmanaged<LogCheckpoints>.fromOpaque(context).takeUnretainedValue()
                if frames >= LogCheckpoints.inlineLimit {
                    sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else {
                    checkpoints.committed(frames: frames)
                }
                return SQLITE_OK
            }, context)
    }

    /// Calls `observer` with what each checkpoint from now on did (tests).
    func observe(_ observer: @escaping @Sendable (Outcome) -> Void) {
        self.observer.withLock { $0 = observer }
    }

    /// After a commit that left `frames` in the log: queues a checkpoint when the log is long.
    private func committed(frames: Int32) {
        var copied = copiedThrough.load(ordering: .relaxed)
        if frames < copied {
            // The log started over.
            copiedThrough.store(0, ordering: .relaxed)
            copied = 0
        }
        guard frames - copied >= Self.threshold else { return }
        guard queued.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        queue.async {
            self.queued.store(false, ordering: .releasing)
            self.checkpoint()
        }
    }

    /// One `PASSIVE` checkpoint through a connection of its own, closed after it: kept open, it
    /// would be the database's last connection when the store closes, and SQLite would then
    /// leave the log behind.
    private func checkpoint() {
        var connection: OpaquePointer?
        defer { sqlite3_close_v2(connection) }
        guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else { return }
        sqlite3_busy_timeout(connection, 100)
        // A read first: a connection opens the log (and learns the database is in WAL mode) on
        // its first read, and SQLite 3.40 checkpoints nothing before that.
        guard sqlite3_exec(connection, "SELECT 1 FROM sqlite_master LIMIT 1", nil, nil, nil) == SQLITE_OK else {
            return
        }
        var frames: Int32 = 0
        var copied: Int32 = 0
        let result = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied)
        guard result == SQLITE_OK else { return }
        copiedThrough.store(copied, ordering: .relaxed)
        let observer = self.observer.withLock { $0 }
        observer?(Outcome(frames: frames, copied: copied))
    }
}
