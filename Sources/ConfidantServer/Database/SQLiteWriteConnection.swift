import Foundation
// SQLiteNIO's own copy of SQLite (its symbols carry a `sqlite_nio_` prefix). The relay's other
// connections use this copy too, and it must stay the only one: two SQLite libraries in one
// process that open the same file lose each other's POSIX locks whenever either closes a
// descriptor, which corrupts databases (sqlite.org/howtocorrupt.html §2.2.1). That rules out
// GRDB, which links the system's SQLite.
import VaporCSQLite

/// One SQLite connection on which a whole write transaction runs on one thread, with its
/// statements prepared once and kept.
///
/// Why not SQLiteNIO for this: it hands each statement to a thread pool and its answer back to
/// an event loop, two thread wake-ups per statement, and a send group is six statements
/// (docs/BENCHMARKS.md). Here a group is one trip to this connection's thread and back.
///
/// Not thread-safe: `SQLiteWriter` owns it and uses it from its one thread only.
final class SQLiteWriteConnection {
    private var handle: OpaquePointer?
    private var prepared: [String: OpaquePointer] = [:]
    /// Frames in the write-ahead log after this connection's last commit (SQLite's WAL hook).
    private(set) var logFrames = 0
    /// Commits of this connection that wrote to the log (SQLite's WAL hook).
    private(set) var loggedCommits = 0
    /// The mailboxes' entry counts as this connection's writes left them; its transactions'
    /// changes count once they commit.
    let pendingEntries = PendingEntryCounts()

    /// Opens the existing database at `path` (the relay's migrations created it) and sets the
    /// write connection's pragmas (`WriteConnectionSetup`).
    init(path: String, pragmas: [String], busyTimeoutMilliseconds: Int) throws(SQLiteStatementFailure) {
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let opened = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
        guard opened == SQLITE_OK else {
            let failure = SQLiteStatementFailure(
                code: opened, message: "Cannot open the SQLite database at \(path): \(Self.text(of: opened))")
            sqlite_nio_sqlite3_close_v2(handle)
            handle = nil
            throw failure
        }
        sqlite_nio_sqlite3_busy_timeout(handle, Int32(clamping: busyTimeoutMilliseconds))
        for pragma in pragmas { try execute(pragma) }
        // Called inside this connection's own `COMMIT`, on its thread, while it is alive. It
        // replaces SQLite's automatic checkpoint, which `wal_autocheckpoint=0` turned off anyway.
        sqlite_nio_sqlite3_wal_hook(
            handle,
            { context, _, _, frames in
                guard let context else { return SQLITE_OK }
                let connection = Unmanaged<SQLiteWriteConnection>.fromOpaque(context).takeUnretainedValue()
                connection.logFrames = Int(frames)
                connection.loggedCommits &+= 1
                return SQLITE_OK
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        for statement in prepared.values { sqlite_nio_sqlite3_finalize(statement) }
        sqlite_nio_sqlite3_close_v2(handle)
    }

    /// How long a statement waits for a lock another connection holds before it fails
    /// `SQLITE_BUSY`: 0 fails at once.
    func waitForLocks(milliseconds: Int) {
        sqlite_nio_sqlite3_busy_timeout(handle, Int32(clamping: milliseconds))
    }

    /// Runs `sql` (no parameters, no rows wanted): `BEGIN`, `COMMIT`, pragmas.
    func execute(_ sql: String) throws(SQLiteStatementFailure) {
        let result = sqlite_nio_sqlite3_exec(handle, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw failure(result) }
    }

    /// Runs `body` inside `BEGIN IMMEDIATE` … `COMMIT`, rolling back when it throws. The three
    /// are prepared once like the group's statements: `sqlite3_exec` parses its text every time.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try statement("BEGIN IMMEDIATE").run()
        do {
            let result = try body()
            resetAll()
            try statement("COMMIT").run()
            pendingEntries.committed()
            return result
        } catch {
            resetAll()
            try? statement("ROLLBACK").run()
            pendingEntries.rolledBack()
            throw error
        }
    }

    /// `PRAGMA data_version`: changes when another connection (of this process or another)
    /// has committed since this one last asked.
    func dataVersion() throws(SQLiteStatementFailure) -> Int64 {
        let pragma = try statement("PRAGMA data_version")
        guard try pragma.step() else { return 0 }
        return pragma.int64(0)
    }

    /// A statement stepped to a row and left there keeps its read transaction, and with it an
    /// old snapshot, open past `COMMIT`: the next `BEGIN IMMEDIATE` would fail with
    /// `SQLITE_BUSY_SNAPSHOT` once another connection has written, and checkpoints could not pass it.
    private func resetAll() {
        for statement in prepared.values { sqlite_nio_sqlite3_reset(statement) }
    }

    /// The statement for `sql`, prepared on first use and kept, reset (`SQLiteWriteStatement.reset`:
    /// its parameters keep their last values until bound again).
    func statement(_ sql: String) throws(SQLiteStatementFailure) -> SQLiteWriteStatement {
        if let statement = prepared[sql] {
            sqlite_nio_sqlite3_reset(statement)
            return SQLiteWriteStatement(pointer: statement, connection: self)
        }
        var statement: OpaquePointer?
        let result = sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else { throw failure(result) }
        prepared[sql] = statement
        return SQLiteWriteStatement(pointer: statement, connection: self)
    }

    /// For each statement prepared so far, how many times SQLite prepared it again: each time is a
    /// parse and a plan that keeping the statement was meant to save.
    var reprepareCounts: [String: Int32] {
        prepared.mapValues { SQLiteWriteStatement(pointer: $0, connection: self).reprepareCount }
    }

    /// A passive checkpoint on this connection, outside a transaction: copies the log's pages
    /// into the database file without waiting for readers or writers. Once the whole log is
    /// copied, the next write transaction starts the log again from its beginning instead of
    /// appending to it. True when it copied the whole log; false when readers still use some of
    /// it, another checkpoint is running (`SQLITE_BUSY`), or it failed: none of these harms the
    /// data, and the next attempt catches up.
    @discardableResult
    func checkpoint() -> Bool {
        var logged: Int32 = 0
        var copied: Int32 = 0
        let result = sqlite_nio_sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logged, &copied)
        return result == SQLITE_OK && logged == copied
    }

    /// Whether a transaction is open (one that failed to roll back leaves it so).
    var inTransaction: Bool { handle.map { sqlite_nio_sqlite3_get_autocommit($0) == 0 } ?? false }

    /// Rows the last `INSERT`, `UPDATE` or `DELETE` changed.
    var changes: Int { Int(sqlite_nio_sqlite3_changes(handle)) }

    func failure(_ result: Int32) -> SQLiteStatementFailure {
        let code = handle.map { sqlite_nio_sqlite3_extended_errcode($0) } ?? result
        let message = sqlite_nio_sqlite3_errmsg(handle).map { String(cString: $0) } ?? Self.text(of: result)
        return SQLiteStatementFailure(code: code == SQLITE_OK ? result : code, message: message)
    }

    private static func text(of result: Int32) -> String {
        sqlite_nio_sqlite3_errstr(result).map { String(cString: $0) } ?? "result \(result)"
    }
}
