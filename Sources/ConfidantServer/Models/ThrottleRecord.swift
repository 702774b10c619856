import Fluent
import Foundation

/// Failure count for one throttled key (e.g. `sign-in/account/<email>`, `sign-in/address/<ip>`).
/// Kept in the database so that every server instance sharing it enforces the same limits.
final class ThrottleRecord: Model, @unchecked Sendable {
    static let schema = "throttles"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let key = "key"
        static let failures = "failures"
        static let lastFailureAt = "last_failure_at"
    }

    @ID(custom: .string(Column.key), generatedBy: .user) var id: String?
    @Field(key: .string(Column.failures)) var failures: Int
    @Field(key: .string(Column.lastFailureAt)) var lastFailureAt: Date

    init() {}

    init(key: String, failures: Int, lastFailureAt: Date) {
        self.id = key
        self.failures = failures
        self.lastFailureAt = lastFailureAt
    }
}
