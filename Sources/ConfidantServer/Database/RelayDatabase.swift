import Fluent
import Foundation
import SQLKit

/// The relay's database (SQLite or PostgreSQL through Fluent) and the one way to write to it.
struct RelayDatabase: Sendable {
    enum Engine: String, Sendable { case sqlite, postgresql }

    /// The pooled database of the application, for reads and inside `write`.
    let db: any Database
    let engine: Engine
    private let synchronous: SQLiteSynchronous
    /// How long a write waits for a lock another process holds on the SQLite file (a backup, a
    /// `sqlite3` shell) before it fails with `database_unavailable`.
    private let busyTimeoutMilliseconds: Int
    private let gate = WriteGate()
    private let checkpoints = WALCheckpoints()

    init(db: any Database, engine: Engine, synchronous: SQLiteSynchronous, busyTimeoutMilliseconds: Int = 5_000) {
        self.db = db
        self.engine = engine
        self.synchronous = synchronous
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
    }

    var isPostgres: Bool { engine == .postgresql }

    /// How long a PostgreSQL write may go unanswered before it fails `database_unavailable`
    /// (see `DatabaseDeadline`); a group of 1,024 sends takes milliseconds.
    static let postgresWriteSeconds = 20

    /// The database in SQL, for the hot paths that bypass Fluent's models.
    var sql: any SQLDatabase {
        get throws { try Self.sql(db) }
    }

    static func sql(_ db: any Database) throws -> any SQLDatabase {
        guard let sql = db as? any SQLDatabase else { throw APIFailure(.internal, "The database does not speak SQL.") }
        return sql
    }

    /// Runs `body` in one transaction and returns its result.
    ///
    /// On SQLite, one writer at a time (see `WriteGate`), and `committed` runs after the commit and
    /// before the next writer starts, so what it hands on follows commit order. On PostgreSQL,
    /// where several instances write, `committed` runs after the commit.
    func write<T: Sendable>(
        _ body: @escaping @Sendable (any Database) async throws -> T,
        committed: @Sendable (T) async -> Void = { _ in }
    ) async throws -> T {
        if isPostgres {
            let db = db
            let result = try await DatabaseDeadline.run(seconds: Self.postgresWriteSeconds) {
                try await db.transaction { try await body($0) }
            }
            await committed(result)
            return result
        }
        await gate.acquire()
        let synchronous = synchronous.rawValue
        let busyTimeout = busyTimeoutMilliseconds
        do {
            // `synchronous` is per connection and the pool hands out any of several, so each write
            // sets it on the connection it runs on (a no-op statement without I/O). NORMAL: a commit
            // survives a crash of the server; FULL: also a power cut (docs/OPERATIONS.md).
            let result = try await db.withConnection { connection in
                if let sql = connection as? any SQLDatabase {
                    try await sql.raw(SQLQueryString("PRAGMA synchronous=\(unsafeRaw: synchronous)")).run()
                    try await sql.raw("PRAGMA wal_autocheckpoint=0").run()
                    try await sql.raw(SQLQueryString("PRAGMA busy_timeout=\(unsafeRaw: String(busyTimeout))")).run()
                }
                return try await connection.transaction { try await body($0) }
            }
            await committed(result)
            await gate.release()
            checkpoints.committed(db)
            return result
        } catch {
            await gate.release()
            throw error
        }
    }

    /// `SELECT 1`: whether the database answers.
    func ping() async throws {
        try await sql.raw("SELECT 1").run()
    }
}
