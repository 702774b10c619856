import Foundation

/// Another user as this profile knows them.
public struct Contact: Sendable, Hashable, Identifiable, Codable {
    public let id: UUID
    /// The e-mail the user signed up with.
    public let email: String
    /// What the user chose to be called.
    public let displayName: String
    /// SHA-256 (hex) of the user's profile picture as last seen, nil when they have none (or it
    /// was not known yet): pictures are cached by it (`Messenger.avatar(of:)`).
    public var avatarDigest: String?

    /// A user as the server's directory lists them.
    public init(id: UUID, email: String, displayName: String, avatarDigest: String? = nil) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.avatarDigest = avatarDigest
    }
}
