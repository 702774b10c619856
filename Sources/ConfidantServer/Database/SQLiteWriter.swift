import Foundation
import NIOPosix
import VaporCSQLite

/// The relay's own SQLite write connection and the one thread it runs on: a whole write
/// transaction is one trip to that thread and back (see `SQLiteWriteConnection`). Opened on first
/// use, and again after a failure that left it inside a transaction.
final class SQLiteWriter: Sendable {
    private let path: String
    private let pragmas: [String]
    private let busyTimeoutMilliseconds: Int
    private let thread = NIOThreadPool(numberOfThreads: 1)
    private let slot = ConnectionSlot()

    /// Only touched on `thread`, one work item at a time.
    private final class ConnectionSlot: @unchecked Sendable {
        var connection: SQLiteWriteConnection?
    }

    init(path: String, pragmas: [String], busyTimeoutMilliseconds: Int) {
        self.path = path
        self.pragmas = pragmas
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        thread.start()
    }

    /// Runs `body` inside `BEGIN IMMEDIATE` … `COMMIT` on the write connection's thread; rolls back
    /// when it throws. The caller keeps other writers out (`WriteGate`).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (SQLiteWriteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            thread.submit { [self] state in
                guard case .active = state else {
                    return continuation.resume(
                        throwing: SQLiteStatementFailure(code: SQLITE_MISUSE, message: "The relay is shutting down."))
                }
                continuation.resume(with: Result { try run(body) })
            }
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
        }
        do {
            return try connection.transaction { try body(connection) }
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
            thread.submit { [slot] _ in
                slot.connection = nil
                continuation.resume()
            }
        }
        try? await thread.shutdownGracefully()
    }
}
