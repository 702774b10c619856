import Fluent
import Foundation

/// An invite code an operator made (`confidant admin invite create`): the database keeps only its
/// SHA-256, with how many sign-ups it still allows and until when.
final class InviteRecord: Model, @unchecked Sendable {
    static let schema = "invites"

    /// Column names, for the fields below, the migration and SQL alike.
    enum Column {
        static let id = "id"
        static let codeHash = "code_hash"
        static let usesLeft = "uses_left"
        static let used = "used"
        static let createdAt = "created_at"
        static let expiresAt = "expires_at"
        static let revokedAt = "revoked_at"
    }

    @ID(custom: .string(Column.id), generatedBy: .user) var id: UUID?
    @Field(key: .string(Column.codeHash)) var codeHash: Data
    @Field(key: .string(Column.usesLeft)) var usesLeft: Int
    @Field(key: .string(Column.used)) var used: Int
    @Field(key: .string(Column.createdAt)) var createdAt: Date
    @OptionalField(key: .string(Column.expiresAt)) var expiresAt: Date?
    @OptionalField(key: .string(Column.revokedAt)) var revokedAt: Date?

    init() {}

    init(id: UUID, codeHash: Data, uses: Int, createdAt: Date, expiresAt: Date?) {
        self.id = id
        self.codeHash = codeHash
        usesLeft = uses
        used = 0
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}
