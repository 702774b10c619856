import Foundation

/// One account as `confidant admin account list` shows it.
public struct AccountSummary: Sendable, Equatable, Encodable {
    public let id: UUID
    public let email: String
    public let displayName: String
    public let createdAt: Date
    /// When a sign-in proved the address; nil for an account that never did (removed after a week).
    public let verifiedAt: Date?
    /// When the operator disabled it; nil while it may sign in.
    public let disabledAt: Date?
    /// Its current devices.
    public let devices: Int
    /// When one of its devices last signed in or called the relay.
    public let lastActiveAt: Date?

    init(_ user: UserRecord, devices: [DeviceRecord]) {
        id = user.id ?? UUID()
        email = user.email
        displayName = user.displayName
        createdAt = user.createdAt
        verifiedAt = user.emailVerifiedAt
        disabledAt = user.disabledAt
        self.devices = devices.count
        lastActiveAt = devices.compactMap(\.lastSeenAt).max()
    }
}

/// One account in full, as `confidant admin account show` shows it.
public struct AccountDetails: Sendable, Equatable, Encodable {
    /// One current device of the account.
    public struct Device: Sendable, Equatable, Encodable {
        public let id: UUID
        public let name: String?
        public let registeredAt: Date
        public let lastSeenAt: Date?
    }

    public let summary: AccountSummary
    public let devices: [Device]
    /// Sessions neither signed out, revoked nor expired.
    public let activeSessions: Int
    /// Bytes of the attachments it uploaded, and of its vault backup objects.
    public let attachmentBytes: Int64
    public let backupBytes: Int64
    /// Mailbox entries waiting for its devices.
    public let waitingEntries: Int
    /// The network addresses it signed in from (as the relay saw them, through trusted proxies),
    /// the latest first, at most `AccountAdministration.maximumAddresses`.
    public let signInAddresses: [SignInAddress]

    /// One address an account signed in from, and when last.
    public struct SignInAddress: Sendable, Equatable, Encodable {
        public let address: String
        public let lastSeenAt: Date
    }
}

/// The whole relay at a glance (`confidant admin stats`).
public struct RelayStatistics: Sendable, Equatable, Encodable {
    public let accounts: Int
    /// Accounts whose address a sign-in proved.
    public let verifiedAccounts: Int
    public let disabledAccounts: Int
    /// Current devices of every account.
    public let devices: Int
    public let activeSessions: Int
    /// Mailbox entries waiting for a device to take them.
    public let waitingEntries: Int
    public let attachmentBytes: Int64
    public let backupBytes: Int64
}
