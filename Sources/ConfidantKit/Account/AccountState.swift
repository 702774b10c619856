import Foundation

/// The profile's account on its server.
public struct AccountState: Sendable, Codable, Hashable {
    /// The server the account is on.
    public var serverURL: URL
    /// The account's user id on that server.
    public var userID: UUID
    /// This device's id (as its identity names it).
    public var deviceID: UUID
    /// The account's e-mail address.
    public var email: String
    /// What others see.
    public var displayName: String
    /// The bearer token; nil after `logout`.
    public var token: String?
    /// When the server stops accepting the token.
    public var tokenExpiresAt: Date?
}
