import Fluent
import Foundation

/// Failure count for one throttled key (e.g. `sign-in/account/<email>`, `sign-in/address/<ip>`).
/// Kept in the database so that every server instance sharing it enforces the same limits.
final class ThrottleRecord: Model, @unchecked Sendable {
    static let schema = "throttles"

    @ID(custom: "key", generatedBy: .user) var id: String?
    @Field(key: "failures") var failures: Int
    @Field(key: "last_failure_at") var lastFailureAt: Date

    init() {}

    init(key: String, failures: Int, lastFailureAt: Date) {
        self.id = key
        self.failures = failures
        self.lastFailureAt = lastFailureAt
    }
}
