import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation

/// The operator's actions on accounts: find them, look at one, disable and enable, delete, revoke
/// a device, count everything. Each change is audited in its own transaction, and the sessions it
/// ends stop at once (`SessionRevoker`, and `RevocationFeed` for other processes on SQLite).
struct AccountAdministration: Sendable {
    /// The most accounts one listing returns.
    static let maximumPage = 1_000
    /// The most sign-in addresses an account's details list.
    static let maximumAddresses = 20
    /// The longest reason a disable takes.
    static let maximumReason = 200

    let services: RelayServices
    let actor: String

    private var database: RelayDatabase { services.database }
    private var now: Date { services.configuration.now() }

    /// Accounts whose e-mail or display name contains `search` (all without one), by e-mail.
    func list(search: String?, limit: Int) async throws -> [AccountSummary] {
        let term = (search ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        var query = UserRecord.query(on: database.db).sort(\.$email).limit(min(max(limit, 1), Self.maximumPage))
        if !term.isEmpty {
            query = query.group(.or) { $0.filter(\.$email ~~ term).filter(\.$displayNameKey ~~ term) }
        }
        // LIKE treats % and _ as wildcards; keep only true matches.
        let users = try await query.all().filter {
            term.isEmpty || $0.email.contains(term) || $0.displayNameKey.contains(term)
        }
        let ids = users.compactMap(\.id)
        let devices = Dictionary(
            grouping: try await DeviceRecord.query(on: database.db).filter(\.$userID ~~ ids).filter(\.$retiredAt == nil)
                .all(), by: \.userID)
        return users.map { AccountSummary($0, devices: devices[$0.id ?? UUID()] ?? []) }
    }

    /// The account `reference` names (its e-mail address or id), in full.
    func details(_ reference: String) async throws -> AccountDetails {
        let user = try await account(reference)
        let userID = try user.requireID()
        let db = database.db
        let devices = try await services.devices.current(of: userID)
        let sessions = try await SessionRecord.query(on: db).filter(\.$userID == userID).filter(\.$revokedAt == nil)
            .filter(\.$expiresAt > now).count()
        let attachments = try await BlobService.storedBytes(backups: false, of: userID, on: database.sql)
        let backups = try await BlobService.storedBytes(backups: true, of: userID, on: database.sql)
        let waiting = try await MailboxRecord.query(on: db).filter(\.$recipientUserID == userID).count()
        let addresses = try await SignInAddressRecord.query(on: db).filter(\.$userID == userID)
            .sort(\.$lastSeen, .descending).limit(Self.maximumAddresses).all()
        return AccountDetails(
            summary: AccountSummary(user, devices: devices),
            devices: devices.map {
                .init(id: $0.deviceID, name: $0.name, registeredAt: $0.registeredAt, lastSeenAt: $0.lastSeenAt)
            },
            activeSessions: sessions, attachmentBytes: attachments, backupBytes: backups,
            waitingEntries: waiting,
            signInAddresses: addresses.map { .init(address: $0.address, lastSeenAt: $0.lastSeen) })
    }

    /// Disables the account: its sessions end and its streams close at once, sign-in is refused
    /// (`account_disabled`) and the directory no longer lists it. Its data stays.
    func disable(_ reference: String, reason: String?) async throws -> AccountSummary {
        let reason = try reason.map(Self.reason)
        let user = try await account(reference)
        let userID = try user.requireID()
        guard user.disabledAt == nil else {
            throw AdministrationError.invalidValue("\(user.email) is disabled already")
        }
        let now = now
        let revocation = Revocation.account(userID)
        let (actor, target) = (actor, Self.target(user))
        try await database.write { db in
            try await UserRecord.query(on: db).filter(\.$id == userID).set(\.$disabledAt, to: now).update()
            try await SessionRecord.query(on: db).filter(\.$userID == userID).filter(\.$revokedAt == nil)
                .set(\.$revokedAt, to: now).update()
            try await SignInTransactionRecord.query(on: db).filter(\.$userID == userID).delete()
            try await AdminAudit.record(
                .disableAccount, target: target, detail: reason, revocation: revocation, actor: actor, at: now, on: db)
        }
        await services.devices.revoker.revoked(revocation)
        user.disabledAt = now
        return AccountSummary(user, devices: try await services.devices.current(of: userID))
    }

    /// Lets a disabled account sign in again (its devices sign in anew: their sessions ended).
    func enable(_ reference: String) async throws -> AccountSummary {
        let user = try await account(reference)
        let userID = try user.requireID()
        guard user.disabledAt != nil else { throw AdministrationError.invalidValue("\(user.email) is not disabled") }
        let now = now
        let (actor, target) = (actor, Self.target(user))
        try await database.write { db in
            try await UserRecord.query(on: db).filter(\.$id == userID).set(\.$disabledAt, to: nil).update()
            try await AdminAudit.record(.enableAccount, target: target, actor: actor, at: now, on: db)
        }
        user.disabledAt = nil
        return AccountSummary(user, devices: try await services.devices.current(of: userID))
    }

    /// Deletes the account and everything of it, as its owner deleting it would: devices (peers
    /// are told), mailbox, attachments, backup objects, sessions and sign-in secrets.
    func delete(_ reference: String) async throws -> AccountSummary {
        let user = try await account(reference)
        let userID = try user.requireID()
        let summary = AccountSummary(user, devices: try await services.devices.current(of: userID))
        let (actor, target, now) = (actor, Self.target(user), now)
        try await services.accounts.erase(userID) { db in
            try await AdminAudit.record(
                .deleteAccount, target: target, revocation: .account(userID), actor: actor, at: now, on: db)
        }
        return summary
    }

    /// Retires one device of the account: its sessions end, its mailbox is emptied, peers are told.
    func revokeDevice(_ reference: String, device deviceID: UUID) async throws {
        let user = try await account(reference)
        let userID = try user.requireID()
        let address = DeviceAddress(userID: userID, deviceID: deviceID)
        let (actor, target, now) = (actor, "\(Self.target(user)) device \(deviceID.canonicalString)", now)
        do {
            try await services.devices.remove(deviceID, ofUser: userID) { db in
                try await AdminAudit.record(
                    .revokeDevice, target: target, revocation: .device(address), actor: actor, at: now, on: db)
            }
        } catch let failure as APIFailure where failure.code == .notFound {
            throw AdministrationError.noSuchDevice(deviceID.canonicalString, account: user.email)
        }
    }

    /// Counts over the whole relay.
    func statistics() async throws -> RelayStatistics {
        let db = database.db
        let now = now
        return RelayStatistics(
            accounts: try await UserRecord.query(on: db).count(),
            verifiedAccounts: try await UserRecord.query(on: db).filter(\.$emailVerifiedAt != nil).count(),
            disabledAccounts: try await UserRecord.query(on: db).filter(\.$disabledAt != nil).count(),
            devices: try await DeviceRecord.query(on: db).filter(\.$retiredAt == nil).count(),
            activeSessions: try await SessionRecord.query(on: db).filter(\.$revokedAt == nil)
                .filter(\.$expiresAt > now).count(),
            waitingEntries: try await MailboxRecord.query(on: db).count(),
            attachmentBytes: try await BlobService.storedBytes(backups: false, on: database.sql),
            backupBytes: try await BlobService.storedBytes(backups: true, on: database.sql))
    }

    /// The account an e-mail address or an id names.
    private func account(_ reference: String) async throws -> UserRecord {
        let trimmed = reference.trimmingCharacters(in: .whitespaces)
        let found: UserRecord?
        if let id = UUID(uuidString: trimmed) {
            found = try await services.accounts.user(id)
        } else if let email = try? AccountService.email(trimmed) {
            found = try await services.accounts.user(email: email)
        } else {
            found = nil
        }
        guard let found else { throw AdministrationError.noSuchAccount(reference) }
        return found
    }

    /// How the audit names an account: its e-mail and id, so a deleted one is still identified.
    private static func target(_ user: UserRecord) -> String {
        "\(user.email) (\(user.id?.canonicalString ?? "?"))"
    }

    private static func reason(_ raw: String) throws -> String {
        let reason = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...maximumReason).contains(reason.count),
            !reason.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw AdministrationError.invalidValue(
                "a reason takes 1…\(maximumReason) characters, without control characters")
        }
        return reason
    }
}
