import ConfidantAuth
import Fluent
import Foundation

/// Growing delays and temporary lock-out, decided by `ConfidantAuth.RiskPolicy` from failure
/// counts kept in the database (so every instance sharing it agrees).
struct Throttle: Sendable {
    let policy: RiskPolicy
    /// Failures below this count cost nothing (sign-ups from one address).
    var freeFailures = 0

    /// Throws `rate_limited` or `locked_out` when any key must wait.
    func check(_ keys: [String], on db: any Database, now: Date) async throws {
        let records = try await ThrottleRecord.query(on: db).filter(\.$id ~~ keys).all()
        for record in records {
            // Never negative: a time read back from the database may be a hair later than `now`.
            let elapsed = max(0, now.timeIntervalSince(record.lastFailureAt))
            if elapsed >= policy.lockoutSeconds { continue }  // the window has passed
            let counted = record.failures - freeFailures
            guard counted > 0 else { continue }
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
                continue
            }
        }
    }

    func recordFailure(_ keys: [String], on db: any Database, now: Date) async throws {
        for key in keys {
            if let record = try await ThrottleRecord.find(key, on: db) {
                record.failures =
                    now.timeIntervalSince(record.lastFailureAt) >= policy.lockoutSeconds ? 1 : record.failures + 1
                record.lastFailureAt = now
                try await record.update(on: db)
            } else {
                try await ThrottleRecord(key: key, failures: 1, lastFailureAt: now).create(on: db)
            }
        }
    }

    func reset(_ keys: [String], on db: any Database) async throws {
        try await ThrottleRecord.query(on: db).filter(\.$id ~~ keys).delete()
    }
}
