import Fluent
import Foundation

/// An account. `email` is stored normalised (trimmed, lower-case) so uniqueness is case-insensitive.
final class UserRecord: Model, @unchecked Sendable {
    static let schema = "users"

    @ID(key: .id) var id: UUID?
    @Field(key: "email") var email: String
    @Field(key: "display_name") var displayName: String
    /// Lower-cased display name, for prefix search.
    @Field(key: "display_name_key") var displayNameKey: String
    @Field(key: "password_hash") var passwordHash: String
    @OptionalField(key: "avatar") var avatar: Data?
    @OptionalField(key: "avatar_type") var avatarType: String?
    @Field(key: "created_at") var createdAt: Date
    /// As entered at sign-up (the seed's form); not shown in the directory.
    @OptionalField(key: "first_name") var firstName: String?
    @OptionalField(key: "last_name") var lastName: String?

    init() {}

    init(id: UUID = UUID(), email: String, displayName: String, passwordHash: String, createdAt: Date = Date()) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.displayNameKey = displayName.lowercased()
        self.passwordHash = passwordHash
        self.createdAt = createdAt
    }
}
