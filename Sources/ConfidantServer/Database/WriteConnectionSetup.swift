import Fluent
import SQLKit
import SQLiteNIO
import Synchronization

/// The SQLite connections that writes have already set their per-connection pragmas on
/// (`synchronous`, `wal_autocheckpoint`, `busy_timeout`). Every statement is a trip to SQLite's
/// thread and back, so setting them once per connection instead of before every write saves
/// three of the dozen trips a send takes (docs/BENCHMARKS.md). The pool keeps its connections;
/// one it replaces is a new object and is set up again.
final class WriteConnectionSetup: Sendable {
    private struct Known {
        weak var connection: SQLiteConnection?
    }

    private let known = Mutex<[Known]>([])
    private let pragmas: [String]

    init(synchronous: SQLiteSynchronous, busyTimeoutMilliseconds: Int) {
        pragmas = Self.pragmas(synchronous: synchronous) + ["PRAGMA busy_timeout=\(busyTimeoutMilliseconds)"]
    }

    /// Every write connection's pragmas but its busy timeout. NORMAL: a commit survives a crash
    /// of the server; FULL: also a power cut (docs/OPERATIONS.md). Checkpoints run in the
    /// background (`WALCheckpoints`).
    static func pragmas(synchronous: SQLiteSynchronous) -> [String] {
        ["PRAGMA synchronous=\(synchronous.rawValue)", "PRAGMA wal_autocheckpoint=0"]
    }

    /// Sets the pragmas on `connection` unless they are set already.
    func prepare(_ connection: any Database) async throws {
        guard let sqlite = connection as? any SQLiteDatabase, let sql = connection as? any SQLDatabase else { return }
        let underlying = try await sqlite.withConnection { $0.eventLoop.makeSucceededFuture($0) }.get()
        if known.withLock({ $0.contains { $0.connection === underlying } }) { return }
        for pragma in pragmas { try await sql.raw(SQLQueryString(stringLiteral: pragma)).run() }
        known.withLock { known in
            known.removeAll { $0.connection == nil }
            known.append(Known(connection: underlying))
        }
    }
}
