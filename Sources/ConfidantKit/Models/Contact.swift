import Foundation

/// Another user as this profile knows them.
public struct Contact: Sendable, Hashable, Identifiable, Codable {
    public let id: UUID
    public let email: String
    public let displayName: String

    public init(id: UUID, email: String, displayName: String) {
        self.id = id
        self.email = email
        self.displayName = displayName
    }
}
