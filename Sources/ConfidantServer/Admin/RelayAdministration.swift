import Foundation

/// What `confidant admin` does to a relay's database, with or without the server running: the
/// relay is opened (and its schema brought up to date) but does not listen. Every change is
/// recorded in the audit under `actor`.
///
/// ```swift
/// let relay = try await RelayServer(configuration: configuration)
/// let admin = relay.administration(as: "cli alice")
/// let (code, _) = try await admin.createInvite(uses: 1, lifetime: 7 * 86_400)
/// _ = try await admin.disableAccount("mallory@example.com", reason: "spam")
/// await relay.shutdown()
/// ```
public struct RelayAdministration: Sendable {
    let services: RelayServices
    /// Who acts, as the audit names them.
    public let actor: String

    private var invites: InviteService {
        InviteService(database: services.database, now: services.configuration.now)
    }

    private var accounts: AccountAdministration { AccountAdministration(services: services, actor: actor) }

    // MARK: Invites

    /// Makes an invite code for `uses` sign-ups, valid for `lifetime` seconds; the code is
    /// returned only here.
    public func createInvite(uses: Int, lifetime: TimeInterval) async throws -> (code: String, invite: Invite) {
        try await invites.create(uses: uses, lifetime: lifetime, actor: actor)
    }

    /// Every invite, newest first.
    public func listInvites() async throws -> [Invite] { try await invites.list() }

    /// Revokes the invite `id`; false when there is none.
    public func revokeInvite(_ id: UUID) async throws -> Bool { try await invites.revoke(id, actor: actor) }

    // MARK: Accounts

    /// Accounts whose e-mail address or display name contains `search` (every account without
    /// one), ordered by e-mail address, at most `limit` (1…1,000).
    public func listAccounts(search: String? = nil, limit: Int = 100) async throws -> [AccountSummary] {
        try await accounts.list(search: search, limit: limit)
    }

    /// The account `account` names (its e-mail address or user id): devices, sessions, storage.
    public func account(_ account: String) async throws -> AccountDetails { try await accounts.details(account) }

    /// Disables an account: its sessions and streams end at once and it may not sign in until
    /// ``enableAccount(_:)``; `reason` goes into the audit.
    public func disableAccount(_ account: String, reason: String? = nil) async throws -> AccountSummary {
        try await accounts.disable(account, reason: reason)
    }

    /// Lets a disabled account sign in again.
    public func enableAccount(_ account: String) async throws -> AccountSummary { try await accounts.enable(account) }

    /// Deletes an account with everything of it; what it was, for the operator's record.
    public func deleteAccount(_ account: String) async throws -> AccountSummary { try await accounts.delete(account) }

    /// Retires one device of an account: its sessions end and its waiting messages go.
    public func revokeDevice(_ device: UUID, of account: String) async throws {
        try await accounts.revokeDevice(account, device: device)
    }

    // MARK: The relay

    /// Writes a consistent copy of the relay (on SQLite) into the new or empty `directory` while
    /// it runs: see `RelayBackup`; `progress` hears of each blob copied. Audited.
    public func backup(to directory: URL, progress: @Sendable (_ copied: Int, _ of: Int) -> Void = { _, _ in })
        async throws -> RelayBackupManifest
    {
        let manifest = try await RelayBackup(services: services).write(to: directory, progress: progress)
        let (actor, now) = (actor, services.configuration.now())
        try await services.database.write { db in
            try await AdminAudit.record(
                .backup, target: directory.path,
                detail: "\(manifest.blobs.count) blobs, \(manifest.blobsGoneDuringBackup) gone meanwhile", actor: actor,
                at: now, on: db)
        }
        return manifest
    }

    /// Counts of accounts, devices, sessions, waiting messages and stored bytes.
    public func statistics() async throws -> RelayStatistics { try await accounts.statistics() }

    /// The latest `limit` administrative actions (1…1,000), newest first.
    public func audit(limit: Int = 50) async throws -> [AuditEntry] {
        try await AdminAudit.latest(limit, on: services.database.db)
    }
}

extension RelayServer {
    /// The operator's actions on this relay's database, audited as `actor`'s.
    public func administration(as actor: String) -> RelayAdministration {
        RelayAdministration(services: services, actor: actor)
    }
}

/// Why an administrative action was refused.
public enum AdministrationError: Error, Equatable, CustomStringConvertible {
    /// A value outside what the action takes.
    case invalidValue(String)
    /// No account has this e-mail address or id.
    case noSuchAccount(String)
    /// The account has no current device with this id.
    case noSuchDevice(String, account: String)

    public var description: String {
        switch self {
        case .invalidValue(let why): "Refused: \(why)."
        case .noSuchAccount(let reference):
            "There is no account \(reference); give its e-mail address or id (`confidant admin account list`)."
        case .noSuchDevice(let device, let account):
            "\(account) has no current device \(device); see `confidant admin account show \(account)`."
        }
    }
}
