import ConfidantAuth
import Fluent
import Foundation
import SQLKit

/// Growing delays and temporary lock-out, decided by `ConfidantAuth.RiskPolicy` from failure
/// counts kept in the database (so every instance sharing it agrees).
///
/// An attempt is counted *before* it is checked, in one write transaction that holds the keys'
/// rows (SQLite: the one writer; PostgreSQL: `FOR UPDATE`): so parallel wrong answers cannot all
/// pass the check before any of them is recorded. A correct answer gives its count back
/// (``Reservation/release()``); only a completed sign-in resets, and only its account's key.
struct Throttle: Sendable {
    let policy: RiskPolicy
    /// Failures that cost nothing before the policy's delays (sign-ups from one address): the
    /// policy then counts from the one after them, so with `F` the first delay falls on the
    /// attempt after `F + 1` failures, as it falls after the first failure with none.
    var freeFailures = 0

    /// The attempts counted for one request, to give back when it turns out correct.
    struct Reservation: Sendable {
        fileprivate let keys: [String]
        fileprivate let database: RelayDatabase
        /// When the attempt was counted, and each key's previous failure time, to put back.
        fileprivate let countedAt: Date
        fileprivate let previous: [String: Date]

        /// Gives the attempt back: it was not a failure.
        func release() async throws {
            let keys = keys
            guard !keys.isEmpty else { return }
            typealias Column = ThrottleRecord.Column
            let countedAt = countedAt
            let previous = previous
            try await database.write { db in
                let sql = try RelayDatabase.sql(db)
                for key in keys {
                    // The delay runs from the last real failure again, unless another attempt
                    // was counted since this one.
                    let last = previous[key] ?? Date(timeIntervalSince1970: 0)
                    // Within a millisecond: databases store times at their own precision.
                    let from = countedAt.addingTimeInterval(-0.001)
                    let to = countedAt.addingTimeInterval(0.001)
                    try await sql.raw(
                        """
                        UPDATE \(ident: ThrottleRecord.schema)
                        SET \(ident: Column.failures) = CASE WHEN \(ident: Column.failures) > 0 THEN \(ident: Column.failures) - 1 ELSE 0 END,
                            \(ident: Column.lastFailureAt) = CASE WHEN \(ident: Column.lastFailureAt) BETWEEN \(bind: from) AND \(bind: to) THEN \(bind: last)
                                                          ELSE \(ident: Column.lastFailureAt) END
                        WHERE \(ident: Column.key) = \(bind: key)
                        """
                    ).run()
                }
            }
        }
    }

    /// Counts an attempt against every key, unless one of them must wait: then nothing is
    /// counted and this throws `rate_limited` or `locked_out`.
    func reserve(_ keys: [String], on database: RelayDatabase, now: Date) async throws -> Reservation {
        let keys = Array(Set(keys)).sorted()  // one order for every writer: no crosswise waits
        let policy = policy
        let freeFailures = freeFailures
        let previous = try await database.write { db -> [String: Date] in
            let sql = try RelayDatabase.sql(db)
            var insert = sql.insert(into: ThrottleRecord.schema)
                .columns(ThrottleRecord.Column.key, ThrottleRecord.Column.failures, ThrottleRecord.Column.lastFailureAt)
            for key in keys {
                insert = insert.values(SQLBind(key), SQLBind(0), SQLBind(Date(timeIntervalSince1970: 0)))
            }
            try await insert.ignoringConflicts().run()
            var select = sql.select()
                .columns(ThrottleRecord.Column.key, ThrottleRecord.Column.failures, ThrottleRecord.Column.lastFailureAt)
                .from(ThrottleRecord.schema).where(ThrottleRecord.Column.key, .in, keys)
                // PostgreSQL locks the rows in the order it returns them, which without ORDER BY
                // is the order of the scan: on a small table the heap's, which updates reshuffle.
                // Two attempts could then each hold one key and wait for the other: a deadlock,
                // which PostgreSQL breaks after a second by failing one (answered 503).
                .orderBy(ThrottleRecord.Column.key)
            if database.isPostgres { select = select.for(.update) }
            var previous: [String: Date] = [:]
            for row in try await select.all() {
                let failures = try row.decode(column: ThrottleRecord.Column.failures, as: Int.self)
                let last = try row.decode(column: ThrottleRecord.Column.lastFailureAt, as: Date.self)
                try Self.check(failures: failures, last: last, now: now, policy: policy, freeFailures: freeFailures)
                previous[try row.decode(column: ThrottleRecord.Column.key, as: String.self)] = last
            }
            // Count this attempt; once the window has passed, counting starts again from it.
            typealias Column = ThrottleRecord.Column
            let windowStart = now.addingTimeInterval(-policy.lockoutSeconds)
            try await sql.raw(
                """
                UPDATE \(ident: ThrottleRecord.schema)
                SET \(ident: Column.failures) = CASE WHEN \(ident: Column.lastFailureAt) < \(bind: windowStart) THEN 1
                                                  ELSE \(ident: Column.failures) + 1 END,
                    \(ident: Column.lastFailureAt) = \(bind: now)
                WHERE \(ident: Column.key) IN (\(binds: keys))
                """
            ).run()
            return previous
        }
        return Reservation(keys: keys, database: database, countedAt: now, previous: previous)
    }

    private static func check(failures: Int, last: Date, now: Date, policy: RiskPolicy, freeFailures: Int) throws {
        // Never negative: a time read back from the database may be a hair later than `now`.
        let elapsed = max(0, now.timeIntervalSince(last))
        if elapsed >= policy.lockoutSeconds { return }  // the window has passed
        let counted = failures - freeFailures
        guard counted > 0 else { return }
        let context = SignInContext(
            configuredChain: [.password], knownDevice: true, knownAddress: true,
            accountFailures: counted, secondsSinceLastFailure: elapsed)
        switch policy.decide(context) {
        case .locked(let retryAfter):
            throw APIFailure(
                .lockedOut,
                "Too many failed attempts; this is locked for \(Int(retryAfter.rounded(.up))) more seconds.",
                retryAfter: Int(retryAfter.rounded(.up)))
        case .proceed(_, let delay) where delay > 0 && delay > elapsed:
            let wait = Int((delay - elapsed).rounded(.up))
            throw APIFailure(.rateLimited, "Wait \(wait) seconds before trying again.", retryAfter: wait)
        case .proceed:
            return
        }
    }

    /// Forgets the keys' failures (a completed sign-in resets its account's key).
    func reset(_ keys: [String], on db: any Database) async throws {
        try await ThrottleRecord.query(on: db).filter(\.$id ~~ keys).delete()
    }
}

extension Throttle {
    /// Refuses (`rate_limited` / `locked_out`) when a key must wait, without counting anything:
    /// for requests that are not guesses, such as starting a sign-in.
    func check(_ keys: [String], on db: any Database, now: Date) async throws {
        for record in try await ThrottleRecord.query(on: db).filter(\.$id ~~ keys).all() {
            try Self.check(
                failures: record.failures, last: record.lastFailureAt, now: now, policy: policy,
                freeFailures: freeFailures)
        }
    }
}
