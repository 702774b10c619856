import Foundation
import Synchronization

/// A database write that got no answer in time.
struct DatabaseWriteTimeout: Error, CustomStringConvertible {
    let seconds: Int
    var description: String { "a database write got no answer within \(seconds) s" }
}

/// Stops waiting for a database write after a deadline. PostgresNIO can leave a transaction
/// unanswered — neither committed nor failed — when the server restarts under it (the fault test
/// that restarts PostgreSQL during 300 sends hung in about one run of four, in `db.transaction`).
/// The relay's one mailbox writer would then wait for ever, and every send after it with it. The
/// abandoned transaction cannot commit later: its connection died with the server's restart.
enum DatabaseDeadline {
    /// Runs `operation` and returns its result, or throws `DatabaseWriteTimeout` after `seconds`.
    static func run<T: Sendable>(
        seconds: Int, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = FirstOutcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.wait(continuation)
            let timer = Task {
                try await Task.sleep(for: .seconds(seconds))
                outcome.resume(with: .failure(DatabaseWriteTimeout(seconds: seconds)))
            }
            Task {
                do {
                    outcome.resume(with: .success(try await operation()))
                } catch {
                    outcome.resume(with: .failure(error))
                }
                timer.cancel()
            }
        }
    }

    /// Resumes the waiting continuation with whichever outcome comes first.
    private final class FirstOutcome<T: Sendable>: Sendable {
        private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

        func wait(_ waiting: CheckedContinuation<T, any Error>) {
            continuation.withLock { $0 = waiting }
        }

        func resume(with result: Result<T, any Error>) {
            let waiting = continuation.withLock { current -> CheckedContinuation<T, any Error>? in
                defer { current = nil }
                return current
            }
            waiting?.resume(with: result)
        }
    }
}
