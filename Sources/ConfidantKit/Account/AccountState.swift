import Foundation

/// The profile's account on its server.
public struct AccountState: Sendable, Codable, Hashable {
    public var serverURL: URL
    public var userID: UUID
    public var deviceID: UUID
    public var email: String
    public var displayName: String
    /// The bearer token; nil after `logout`.
    public var token: String?
    public var tokenExpiresAt: Date?
}
