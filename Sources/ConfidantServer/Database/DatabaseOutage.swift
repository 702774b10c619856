import AsyncKit
import ConfidantAPI
import Foundation
import Logging
import PostgresNIO
import SQLiteNIO
import Synchronization
import VaporCSQLite

/// Failures of the database, or of the disk under it, that are not the request's fault: a full
/// disk, a database that is restarting or unreachable, a pool with no free connection. They are
/// answered `503` with `Retry-After` and a typed code (clients keep the message and retry), and
/// logged as one line naming the cause, at most once per cause every ten seconds.
enum DatabaseOutage {
    /// The cause, for the log; the failure, for the client.
    struct Classified: Sendable {
        let failure: APIFailure
        let cause: String
    }

    /// Seconds a client is asked to wait before retrying.
    static let retryAfter = 2

    /// The outage behind `error`, or nil for anything else.
    static func classify(_ error: any Error) -> Classified? {
        switch error {
        case ConnectionPoolTimeoutError.connectionRequestTimeout:
            return database("no database connection became free in time (the database is down or overloaded)")
        case ConnectionPoolError.shutdown:
            return database("the database connection pool is shut down")
        case let timeout as DatabaseWriteTimeout:
            return database("\(timeout) (the connection was lost in the middle of it)")
        case let error as PSQLError:
            return postgres(error)
        case let error as SQLiteError:
            return sqlite(error)
        case let failure as SQLiteStatementFailure:
            return sqlite(failure)
        default:
            return nil
        }
    }

    fileprivate static func database(_ cause: String) -> Classified {
        Classified(
            failure: APIFailure(
                .databaseUnavailable, "The server's database is unavailable for the moment; retry shortly.",
                retryAfter: retryAfter),
            cause: cause)
    }

    fileprivate static func storage(_ cause: String) -> Classified {
        Classified(
            failure: APIFailure(
                .storageUnavailable, "The server cannot store anything at the moment; retry later.",
                retryAfter: retryAfter),
            cause: cause)
    }

    private static func postgres(_ error: PSQLError) -> Classified? {
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            return database("the PostgreSQL connection was lost (\(error.code))")
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            if state == "53100" { return storage("PostgreSQL's disk is full (SQLSTATE 53100)") }
            // 08: connection exceptions; 57P01–57P03: shutting down or starting; 53: out of
            // resources (connections, memory); 40001/40P01: a serialization failure or deadlock
            // that the same request retried succeeds with.
            if state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") || state == "40001"
                || state == "40P01"
            {
                return database("PostgreSQL refused the statement (SQLSTATE \(state))")
            }
            return nil
        default:
            return nil
        }
    }

    private static func sqlite(_ error: SQLiteError) -> Classified? {
        switch error.reason {
        case .full: return storage("the disk holding the SQLite database is full")
        case .ioError, .ioErrorFailedRead, .ioErrorIncompleteRead, .ioErrorFailedWrite, .ioErrorFailedSync,
            .ioErrorFailedDirSync, .ioErrorFailedTruncate, .ioErrorFailedStat, .ioErrorNoMemory,
            .ioErrorFailedSharedMemOpen, .ioErrorFailedSharedMemSize, .ioErrorFailedSharedMemMap,
            .ioErrorFailedMemoryMap, .ioErrorCantFindTempdir:
            return storage("the SQLite database could not be read or written (\(error.reason))")
        case .readOnly, .readonlyCantLock, .readonlyDirectory, .readonlyInRollback, .readonlyInRecovery:
            return storage("the SQLite database is read-only (\(error.reason))")
        case .busy, .busyTimeout, .busyInRecovery, .busyInSnapshot, .locked, .lockedBySharedCache:
            return database("the SQLite database is busy (\(error.reason))")
        case .cantOpen, .cantOpenDirectory, .cantOpenInvalidPath:
            return database("the SQLite database cannot be opened (\(error.reason))")
        default:
            return nil
        }
    }
}

extension DatabaseOutage {
    /// The same causes as SQLiteNIO's errors, from the relay's own write connection.
    fileprivate static func sqlite(_ failure: SQLiteStatementFailure) -> Classified? {
        switch failure.primaryCode {
        case SQLITE_FULL: return storage("the disk holding the SQLite database is full")
        case SQLITE_IOERR: return storage("the SQLite database could not be read or written (\(failure))")
        case SQLITE_READONLY: return storage("the SQLite database is read-only (\(failure))")
        case SQLITE_BUSY, SQLITE_LOCKED: return database("the SQLite database is busy (\(failure))")
        case SQLITE_CANTOPEN: return database("the SQLite database cannot be opened (\(failure))")
        default: return nil
        }
    }
}

/// Logs outages without flooding the log while one lasts: the first of each cause, then at
/// most one line per cause every `interval`, saying how many were not logged.
final class OutageLog: Sendable {
    private struct Entry {
        var lastLogged: ContinuousClock.Instant
        var suppressed: Int
    }
    private let entries = Mutex<[String: Entry]>([:])
    private let latest = Mutex<(at: ContinuousClock.Instant, outage: DatabaseOutage.Classified)?>(nil)
    private let interval: Duration

    init(interval: Duration = .seconds(10)) {
        self.interval = interval
    }

    /// The last outage, if it happened within `window`: the readiness check reports it.
    func recent(within window: Duration) -> DatabaseOutage.Classified? {
        latest.withLock { latest in
            guard let latest, ContinuousClock.now - latest.at < window else { return nil }
            return latest.outage
        }
    }

    func record(_ outage: DatabaseOutage.Classified, logger: Logger) {
        let now = ContinuousClock.now
        latest.withLock { $0 = (now, outage) }
        let suppressed: Int? = entries.withLock { entries in
            if var entry = entries[outage.cause], now - entry.lastLogged < interval {
                entry.suppressed += 1
                entries[outage.cause] = entry
                return nil
            }
            let suppressed = entries[outage.cause]?.suppressed ?? 0
            entries[outage.cause] = Entry(lastLogged: now, suppressed: 0)
            return suppressed
        }
        guard let suppressed else { return }
        var metadata: Logger.Metadata = ["code": "\(outage.failure.code.rawValue)"]
        if suppressed > 0 { metadata["since_last_line"] = "\(suppressed) more" }
        logger.error("unavailable: \(outage.cause)", metadata: metadata)
    }
}
