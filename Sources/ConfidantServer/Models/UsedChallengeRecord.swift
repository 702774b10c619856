import Fluent
import Foundation

/// A device challenge that served a sign-in: kept until it expires, so that it serves only one.
final class UsedChallengeRecord: Model, @unchecked Sendable {
    static let schema = "used_challenges"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let nonce = "nonce"
        static let expiresAt = "expires_at"
    }

    /// The challenge's random part, in hex.
    @ID(custom: .string(Column.nonce), generatedBy: .user) var id: String?
    @Field(key: .string(Column.expiresAt)) var expiresAt: Date

    init() {}

    init(nonce: String, expiresAt: Date) {
        self.id = nonce
        self.expiresAt = expiresAt
    }
}
