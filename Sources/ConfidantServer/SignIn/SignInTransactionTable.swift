import Fluent
import Foundation
import SQLKit

/// The updates of a sign-in transaction that must not lose to a concurrent request: each is one
/// statement that reads and writes the row together.
enum SignInTransactionTable {
    typealias Column = SignInTransactionRecord.Column

    /// Counts a wrong answer; an arithmetic challenge is spent (a new one comes with the next
    /// GET). The transaction closes at `closingAt` wrong answers: then this throws
    /// `transaction_expired`.
    static func recordWrongAnswer(
        _ transaction: SignInTransactionRecord, freshChallenge: Bool, closingAt limit: Int,
        on database: RelayDatabase
    ) async throws {
        let id = try transaction.requireID()
        let closed = try await database.write { db -> Bool in
            let sql = try RelayDatabase.sql(db)
            let clear: SQLQueryString = freshChallenge ? ", \(ident: Column.challenge) = NULL" : ""
            guard
                let row = try await sql.raw(
                    """
                    UPDATE \(ident: SignInTransactionRecord.schema) SET \(ident: Column.attempts) = \(ident: Column.attempts) + 1\(clear)
                    WHERE \(ident: "id") = \(bind: id) RETURNING \(ident: Column.attempts)
                    """
                ).first()
            else { return true }
            guard try row.decode(column: Column.attempts, as: Int.self) >= limit else { return false }
            try await sql.delete(from: SignInTransactionRecord.schema).where("id", .equal, id).run()
            return true
        }
        if closed { throw APIFailure(.transactionExpired, "Too many wrong answers; start the sign-in again.") }
    }

    /// Moves the transaction past step `index`; false when another request already did.
    static func advance(_ transaction: SignInTransactionRecord, from index: Int, on database: RelayDatabase)
        async throws -> Bool
    {
        let id = try transaction.requireID()
        return try await database.write { db in
            try await RelayDatabase.sql(db).raw(
                """
                UPDATE \(ident: SignInTransactionRecord.schema)
                SET \(ident: Column.stepIndex) = \(ident: Column.stepIndex) + 1, \(ident: Column.challenge) = NULL,
                    \(ident: Column.codeSentAt) = NULL
                WHERE \(ident: "id") = \(bind: id) AND \(ident: Column.stepIndex) = \(bind: index)
                RETURNING \(ident: Column.stepIndex)
                """
            ).first() != nil
        }
    }
}
