import Fluent
import Foundation
import SQLKit
import Synchronization

/// SQLite checkpoints (copying the write-ahead log back into the database file) off the write
/// path. By default SQLite checkpoints inside the commit that fills the log past 1,000 pages,
/// which holds up the one writer — and with it every send queued behind it — for the copy and its
/// fsync. Writes turn that off on their connection (`wal_autocheckpoint=0`); after a commit this
/// starts a passive checkpoint on another connection, in the background, unless one is running
/// or one started less than `spacing` ago. Under load one runs all the time, so the log stays a
/// few group commits long; a quiet server checkpoints after each burst. The relay's own write
/// connection (`writer`) is told when one runs and whether it copied the whole log: the write
/// after that starts the log over.
final class WALCheckpoints: Sendable {
    static let spacing: Duration = .milliseconds(250)

    private let state = Mutex<(lastStart: ContinuousClock.Instant?, running: Bool)>((nil, false))
    /// The checkpoint running now, so that shutting down waits for it rather than closing its
    /// connection under it.
    private let current = Mutex<Task<Void, Never>?>(nil)
    private let writer: SQLiteWriter?

    init(writer: SQLiteWriter?) {
        self.writer = writer
    }

    func committed(_ db: any Database) {
        let now = ContinuousClock.now
        let start = state.withLock { state -> Bool in
            guard !state.running, state.lastStart.map({ now - $0 >= Self.spacing }) ?? true else { return false }
            state = (now, true)
            return true
        }
        guard start, let sql = db as? any SQLDatabase else { return }
        writer?.checkpointStarted()
        let task = Task {
            var copiedWhole = false
            do {
                // One row: busy (another checkpoint ran), frames in the log, frames copied back.
                if let row = try await sql.raw("PRAGMA wal_checkpoint(PASSIVE)").first() {
                    let busy = try row.decode(column: "busy", as: Int.self)
                    let log = try row.decode(column: "log", as: Int.self)
                    copiedWhole = try busy == 0 && log == row.decode(column: "checkpointed", as: Int.self)
                }
            } catch {
                db.logger.warning("WAL checkpoint failed; the next one catches up", metadata: ["error": "\(error)"])
            }
            self.writer?.checkpointEnded(copiedWhole: copiedWhole)
            self.state.withLock { $0.running = false }
        }
        current.withLock { $0 = task }
    }

    /// Waits for the checkpoint running now, if any (before the database closes).
    func settle() async {
        await current.withLock { $0 }?.value
    }
}
