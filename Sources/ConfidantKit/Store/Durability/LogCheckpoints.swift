import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the store's write-ahead log back into the database (a checkpoint) after the commit
/// that takes the log past SQLite's threshold, on the store's own connection, instead of inside
/// that commit. SQLite's automatic checkpoint runs in the commit, on the thread that committed —
/// an event loop of the messenger — and syncs the log and the database there before the commit
/// returns, and the message that commit carried waits for both.
/// Here the commit returns at once and the checkpoint is queued on the connection's own queue
/// (GRDB's writer), where it runs when the connection is free: the message goes on its way
/// meanwhile, and a write that comes during the checkpoint waits for it as it would have. On the
/// same connection, with no transaction of its own open, the checkpoint copies the whole log (a
/// connection of its own, tried before, rarely did beside a busy writer, so the log seldom started
/// over). GRDB has no call for SQLite's log hook, so it is set here directly.
final class LogCheckpoints: Sendable {
    /// Frames in the log that queue a checkpoint: SQLite's own default (`wal_autocheckpoint`).
    static let threshold: Int32 = 1_000
    /// Frames at which the committing connection checkpoints the log itself, in the commit, as
    /// SQLite would: the log stays bounded should the queued checkpoints not copy it (another
    /// process reading an old snapshot for long keeps them from finishing).
    static let inlineLimit: Int32 = 8 * threshold

    /// Whether a checkpoint is queued and has not started: later commits do not queue another.
    private let queued = Atomic<Bool>(false)
    /// The connection's queue, to queue checkpoints on (weak: it holds this through its
    /// configuration, see ``install(on:)``).
    private let connection = Mutex(WeakConnection())
    /// Checkpoints run from the queue, for the tests.
    let runs = Atomic<Int>(0)

    private struct WeakConnection {
        weak var queue: DatabaseQueue?
    }

    /// Takes the log's checkpoints off `db`'s commits: from here on SQLite calls ``committed(frames:)``
    /// after each commit of that connection instead of checkpointing in it. From the
    /// configuration's `prepareDatabase`, which the `DatabaseQueue` keeps: that holds `self` for
    /// as long as the connection lives.
    func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, _, frames in
                guard let context else { return SQLITE_OK }
                if frames >= LogCheckpoints.inlineLimit {
                    sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else {
                    Unmanaged<LogCheckpoints>.fromOpaque(context).takeUnretainedValue().committed(frames: frames)
                }
                return SQLITE_OK
            }, context)
    }

    /// The queue of the connection ``install(on:)`` was given, once it exists.
    func attach(to queue: DatabaseQueue) {
        connection.withLock { $0.queue = queue }
    }

    /// After a commit that left `frames` in the log (inside it, on the committing thread): queues
    /// a checkpoint when the log is long.
    private func committed(frames: Int32) {
        guard frames >= Self.threshold,
            queued.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        guard let queue = connection.withLock({ $0.queue }) else {
            queued.store(false, ordering: .releasing)
            return
        }
        queue.asyncWriteWithoutTransaction { db in
            self.queued.store(false, ordering: .releasing)
            // PASSIVE: waits for nobody; one that cannot finish (another process reading) leaves
            // the rest to the next, or to `inlineLimit`.
            _ = try? db.checkpoint(.passive)
            self.runs.add(1, ordering: .relaxed)
        }
    }
}
