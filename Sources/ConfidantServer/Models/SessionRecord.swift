import Fluent
import Foundation

/// A bearer session. Only SHA-256 of the token is stored, so a database copy cannot be replayed.
final class SessionRecord: Model, @unchecked Sendable {
    static let schema = "sessions"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let userID = "user_id"
        static let deviceID = "device_id"
        static let tokenHash = "token_hash"
        static let createdAt = "created_at"
        static let expiresAt = "expires_at"
        static let revokedAt = "revoked_at"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.userID)) var userID: UUID
    @Field(key: .string(Column.deviceID)) var deviceID: UUID
    @Field(key: .string(Column.tokenHash)) var tokenHash: Data
    @Field(key: .string(Column.createdAt)) var createdAt: Date
    @Field(key: .string(Column.expiresAt)) var expiresAt: Date
    @OptionalField(key: .string(Column.revokedAt)) var revokedAt: Date?

    init() {}

    init(userID: UUID, deviceID: UUID, tokenHash: Data, createdAt: Date, expiresAt: Date) {
        self.id = UUID()
        self.userID = userID
        self.deviceID = deviceID
        self.tokenHash = tokenHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}
