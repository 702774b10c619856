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
    /// Whether messages in the seed app's insecure cipher (`seed-legacy`) are opened; off by
    /// default, and only for reading what a seed app sends.
    public var seedCompatibility: Bool = false
    /// Whether peers are told when their messages are read (delivery receipts always go).
    public var sendsReadReceipts: Bool = true
}

extension AccountState {
    private enum CodingKeys: String, CodingKey {
        case serverURL, userID, deviceID, email, displayName, token, tokenExpiresAt, seedCompatibility
        case sendsReadReceipts
    }

    /// Decodes a stored account; profiles written before `seedCompatibility` existed have it off.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        serverURL = try container.decode(URL.self, forKey: .serverURL)
        userID = try container.decode(UUID.self, forKey: .userID)
        deviceID = try container.decode(UUID.self, forKey: .deviceID)
        email = try container.decode(String.self, forKey: .email)
        displayName = try container.decode(String.self, forKey: .displayName)
        token = try container.decodeIfPresent(String.self, forKey: .token)
        tokenExpiresAt = try container.decodeIfPresent(Date.self, forKey: .tokenExpiresAt)
        seedCompatibility = try container.decodeIfPresent(Bool.self, forKey: .seedCompatibility) ?? false
        sendsReadReceipts = try container.decodeIfPresent(Bool.self, forKey: .sendsReadReceipts) ?? true
    }
}
