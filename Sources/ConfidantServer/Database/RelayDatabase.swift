import Fluent
import Foundation
import SQLKit

/// The relay's database (SQLite or PostgreSQL through Fluent) and the one way to write to it.
struct RelayDatabase: Sendable {
    enum Engine: String, Sendable { case sqlite, postgresql }

    /// The pooled database of the application, for reads and inside `write`.
    let db: any Database
    let engine: Engine
    /// SQLite: the relay's own write connection, for writes that are only statements
    /// (`writeOnOwnConnection`); nil on PostgreSQL.
    let writer: SQLiteWriter?
    private let gate: WriteGate
    private let setup: WriteConnectionSetup
    private let checkpoints: WALCheckpoints

    /// `busyTimeoutMilliseconds`: how long a write waits for a lock another process holds on the
    /// SQLite file (a backup, a `sqlite3` shell) before it fails with `database_unavailable`.
    /// `sqlitePath`: the SQLite file, for the relay's own write connection.
    /// `postgresWriteSeconds`: how long a PostgreSQL write may go unanswered (`DatabaseDeadline`).
    init(
        db: any Database, engine: Engine, sqlitePath: String? = nil, synchronous: SQLiteSynchronous,
        busyTimeoutMilliseconds: Int, postgresWriteSeconds: Int
    ) {
        self.db = db
        self.engine = engine
        self.postgresWriteSeconds = postgresWriteSeconds
        setup = WriteConnectionSetup(synchronous: synchronous, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        let gate = WriteGate()
        self.gate = gate
        writer = sqlitePath.map {
            SQLiteWriter(
                path: $0, pragmas: WriteConnectionSetup.pragmas(synchronous: synchronous) + SQLiteWriter.pragmas,
                busyTimeoutMilliseconds: busyTimeoutMilliseconds, gate: gate)
        }
        checkpoints = WALCheckpoints(writer: writer)
    }

    /// Closes the relay's own write connection (after the application, with nothing left to write).
    func close() async {
        await writer?.close()
    }

    /// Waits for a background checkpoint still running, so that closing the pool does not fail it.
    func settleCheckpoints() async {
        await checkpoints.settle()
    }

    var isPostgres: Bool { engine == .postgresql }

    /// How long a PostgreSQL write may go unanswered before it fails `database_unavailable`
    /// (see `DatabaseDeadline`); a group of 1,024 sends takes milliseconds.
    private let postgresWriteSeconds: Int

    /// The database in SQL, for the hot paths that bypass Fluent's models.
    var sql: any SQLDatabase {
        get throws { try Self.sql(db) }
    }

    static func sql(_ db: any Database) throws -> any SQLDatabase {
        guard let sql = db as? any SQLDatabase else { throw APIFailure(.internal, "The database does not speak SQL.") }
        return sql
    }

    /// Runs `inserts` on `db`, one statement after another.
    static func run(_ inserts: some Sequence<SQLInsert>, on db: any Database) async throws {
        let sql = try Self.sql(db)
        for insert in inserts { try await SQLInsertBuilder(insert, on: sql).run() }
    }

    /// Runs `body` in one transaction and returns its result.
    ///
    /// On SQLite, one writer at a time (see `WriteGate`), and `committed` runs after the commit and
    /// before the next writer starts, so what it hands on follows commit order. On PostgreSQL,
    /// where several instances write, `committed` runs after the commit.
    ///
    /// `singleStatement`: `body` runs exactly one statement, which the database applies atomically
    /// on its own, so it runs without `BEGIN` and `COMMIT` (two trips to SQLite's thread fewer).
    ///
    /// Sends and acknowledgements on SQLite go to the relay's own connection instead
    /// (`writeOnOwnConnection`).
    func write<T: Sendable>(
        singleStatement: Bool = false,
        _ body: @escaping @Sendable (any Database) async throws -> T,
        committed: @Sendable (T) async -> Void = { _ in }
    ) async throws -> T {
        if isPostgres {
            let db = db
            let result = try await DatabaseDeadline.run(seconds: postgresWriteSeconds) {
                singleStatement ? try await body(db) : try await db.transaction { try await body($0) }
            }
            await committed(result)
            return result
        }
        await gate.acquire()
        let setup = setup
        do {
            let result = try await db.withConnection { connection in
                // Per connection, and the pool hands out any of several: set up before its first write.
                try await setup.prepare(connection)
                if singleStatement { return try await body(connection) }
                return try await connection.transaction { try await body($0) }
            }
            await committed(result)
            gate.release()
            checkpoints.committed(db)
            return result
        } catch {
            gate.release()
            throw error
        }
    }

    /// SQLite, on the relay's own write connection's thread: runs `body` as one transaction
    /// there, without a trip however many statements it runs. Ordered with every other write as
    /// `write` is (one writer at a time; `committed` before the next writer starts).
    func writeOnOwnConnection<T>(
        on thread: borrowing SQLiteWriter.OnThread, _ body: (SQLiteWriteConnection) throws -> T,
        committed: (T) -> Void = { _ in }
    ) throws -> T {
        let result = try thread.write(body, committed: committed)
        checkpoints.committed(db)
        return result
    }

    /// `SELECT 1`: whether the database answers.
    func ping() async throws {
        try await sql.raw("SELECT 1").run()
    }
}
