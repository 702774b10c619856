import Fluent
import Foundation
import SQLKit

/// At most `limit` events per key in each `window`, counted in the database in one statement per
/// event (so every instance sharing it agrees, and parallel requests cannot slip past the count).
/// Past the limit it answers `rate_limited` with the seconds until the window ends.
struct RateLimit: Sendable {
    static let table = "rate_windows"

    /// Column names, for the migration and the SQL below.
    enum Column {
        static let key = "key"
        static let windowStart = "window_start"
        static let count = "count"
    }

    let limit: Int
    let window: TimeInterval
    /// Says what is limited, for the error message ("sign-ins for this account").
    let what: String

    /// Counts one event for each key; throws `rate_limited` if any key is over its limit.
    func take(_ keys: [String], on database: RelayDatabase, now: Date) async throws {
        let limit = limit
        let window = window
        let counts = try await database.write { db -> [(count: Int, windowStart: Date)] in
            let sql = try RelayDatabase.sql(db)
            var counts: [(Int, Date)] = []
            for key in Set(keys).sorted() {
                let expired = now.addingTimeInterval(-window)
                // One statement: a new window, or the current one counted up.
                guard
                    let row = try await sql.raw(
                        """
                        INSERT INTO \(ident: Self.table) (\(ident: Column.key), \(ident: Column.windowStart), \(ident: Column.count))
                        VALUES (\(bind: key), \(bind: now), 1)
                        ON CONFLICT (\(ident: Column.key)) DO UPDATE SET
                          \(ident: Column.count) = CASE WHEN \(ident: Self.table).\(ident: Column.windowStart) < \(bind: expired) THEN 1
                                                    ELSE \(ident: Self.table).\(ident: Column.count) + 1 END,
                          \(ident: Column.windowStart) = CASE WHEN \(ident: Self.table).\(ident: Column.windowStart) < \(bind: expired)
                                                    THEN \(bind: now) ELSE \(ident: Self.table).\(ident: Column.windowStart) END
                        RETURNING \(ident: Column.count), \(ident: Column.windowStart)
                        """
                    ).first()
                else { continue }
                counts.append(
                    (
                        try row.decode(column: Column.count, as: Int.self),
                        try row.decode(column: Column.windowStart, as: Date.self)
                    ))
            }
            return counts
        }
        if let over = counts.first(where: { $0.count > limit }) {
            let wait = max(1, Int(over.windowStart.addingTimeInterval(window).timeIntervalSince(now).rounded(.up)))
            throw APIFailure(.rateLimited, "Too many \(what); try again in \(wait) seconds.", retryAfter: wait)
        }
    }

    /// Forgets windows that ended long ago.
    static func purge(before date: Date, on db: any Database) async throws {
        try await RelayDatabase.sql(db).delete(from: table).where(Column.windowStart, .lessThan, date).run()
    }
}

extension RateLimitSetting {
    /// Counts one event for each key against this setting (see `RateLimit.take`).
    func take(_ keys: [String], on database: RelayDatabase, now: Date, what: String = "attempts") async throws {
        try await RateLimit(limit: limit, window: window, what: what).take(keys, on: database, now: now)
    }
}
