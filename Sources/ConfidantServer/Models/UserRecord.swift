import Fluent
import Foundation

/// An account. `email` is stored normalised (trimmed, lower-case) so uniqueness is case-insensitive.
final class UserRecord: Model, @unchecked Sendable {
    static let schema = "users"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let email = "email"
        static let displayName = "display_name"
        static let displayNameKey = "display_name_key"
        static let passwordHash = "password_hash"
        static let avatar = "avatar"
        static let avatarType = "avatar_type"
        static let createdAt = "created_at"
        static let firstName = "first_name"
        static let lastName = "last_name"
        static let emailVerifiedAt = "email_verified_at"
        static let avatarDigest = "avatar_digest"
        static let disabledAt = "disabled_at"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.email)) var email: String
    @Field(key: .string(Column.displayName)) var displayName: String
    /// Lower-cased display name, for prefix search.
    @Field(key: .string(Column.displayNameKey)) var displayNameKey: String
    @Field(key: .string(Column.passwordHash)) var passwordHash: String
    @OptionalField(key: .string(Column.avatar)) var avatar: Data?
    @OptionalField(key: .string(Column.avatarType)) var avatarType: String?
    /// SHA-256 (hex) of `avatar`: clients cache pictures by it.
    @OptionalField(key: .string(Column.avatarDigest)) var avatarDigest: String?
    @Field(key: .string(Column.createdAt)) var createdAt: Date
    /// As entered at sign-up (the seed's form); not shown in the directory.
    @OptionalField(key: .string(Column.firstName)) var firstName: String?
    @OptionalField(key: .string(Column.lastName)) var lastName: String?
    /// When a sign-in proved the address (its e-mail code answered); nil until then: the account
    /// is then out of the directory and has no device to receive on.
    @OptionalField(key: .string(Column.emailVerifiedAt)) var emailVerifiedAt: Date?
    /// When the operator disabled the account (`confidant admin account disable`); nil while it
    /// may sign in.
    @OptionalField(key: .string(Column.disabledAt)) var disabledAt: Date?

    init() {}

    init(id: UUID = UUID(), email: String, displayName: String, passwordHash: String, createdAt: Date) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.displayNameKey = displayName.lowercased()
        self.passwordHash = passwordHash
        self.createdAt = createdAt
    }
}
