import Foundation

/// Another user as this profile knows them.
public struct Contact: Sendable, Hashable, Identifiable, Codable {
    public let id: UUID
    /// The e-mail the user signed up with.
    public let email: String
    /// What the user chose to be called.
    public let displayName: String

    /// A user as the server's directory lists them.
    public init(id: UUID, email: String, displayName: String) {
        self.id = id
        self.email = email
        self.displayName = displayName
    }
}
