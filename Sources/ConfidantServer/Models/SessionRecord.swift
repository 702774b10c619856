import Fluent
import Foundation

/// A bearer session. Only SHA-256 of the token is stored, so a database copy cannot be replayed.
final class SessionRecord: Model, @unchecked Sendable {
    static let schema = "sessions"

    @ID(key: .id) var id: UUID?
    @Field(key: "user_id") var userID: UUID
    @Field(key: "device_id") var deviceID: UUID
    @Field(key: "token_hash") var tokenHash: Data
    @Field(key: "created_at") var createdAt: Date
    @Field(key: "expires_at") var expiresAt: Date
    @OptionalField(key: "revoked_at") var revokedAt: Date?

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
