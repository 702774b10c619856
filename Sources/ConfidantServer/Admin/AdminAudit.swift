import Fluent
import Foundation

/// What an operator did, as the audit names it.
public enum AdminAction: String, Sendable, CaseIterable {
    case disableAccount = "account disable"
    case enableAccount = "account enable"
    case deleteAccount = "account delete"
    case revokeDevice = "device revoke"
    case createInvite = "invite create"
    case revokeInvite = "invite revoke"
    case backup = "backup"
}

/// One line of `confidant admin audit`.
public struct AuditEntry: Sendable, Equatable, Encodable {
    /// Increasing: the order the actions were taken in.
    public let sequence: Int64
    public let at: Date
    /// Who acted: `cli <user>` for the command, as the caller of `RelayServer.administration(as:)` gave it.
    public let actor: String
    /// The action's name as `AdminAction` spells it (an unknown one from a newer version as written).
    public let action: String
    /// What it acted on: an account's e-mail and id, a device, an invite's id.
    public let target: String
    /// The reason given, or what else the action recorded.
    public let detail: String?

    init(_ record: AuditRecord) {
        sequence = record.id ?? 0
        at = record.at
        actor = record.actor
        action = record.action
        target = record.target
        detail = record.detail
    }
}

/// Writing and reading the audit of administrative actions.
enum AdminAudit {
    /// The most entries `admin audit` shows at once.
    static let maximumPage = 1_000

    /// Records one action in the transaction that took it.
    static func record(
        _ action: AdminAction, target: String, detail: String? = nil, revocation: Revocation? = nil, actor: String,
        at now: Date, on db: any Database
    ) async throws {
        try await AuditRecord(
            at: now, actor: actor, action: action, target: target, detail: detail, revocation: revocation
        ).create(on: db)
    }

    /// The latest `limit` entries, newest first.
    static func latest(_ limit: Int, on db: any Database) async throws -> [AuditEntry] {
        try await AuditRecord.query(on: db).sort(\.$id, .descending).limit(min(max(limit, 1), maximumPage)).all()
            .map(AuditEntry.init)
    }
}
