import ConfidantAPI
import Fluent
import Foundation
import SQLKit

/// Invite codes: made, listed and revoked by the operator (`confidant admin invite`), spent by
/// sign-up on a server that takes new accounts by invite only.
struct InviteService: Sendable {
    /// The most sign-ups one code allows.
    static let maximumUses = 10_000
    /// How long a code may stay valid: one hour to a year.
    static let lifetimes: ClosedRange<TimeInterval> = 3_600...(365 * 86_400)

    let database: RelayDatabase
    let now: @Sendable () -> Date

    /// Makes a code for `uses` sign-ups that expires after `lifetime`; the code is shown once.
    func create(uses: Int, lifetime: TimeInterval, actor: String) async throws -> (code: String, invite: Invite) {
        guard (1...Self.maximumUses).contains(uses) else {
            throw AdministrationError.invalidValue("an invite allows 1…\(Self.maximumUses) sign-ups, not \(uses)")
        }
        guard Self.lifetimes.contains(lifetime) else {
            throw AdministrationError.invalidValue("an invite expires after one hour to 365 days")
        }
        let code = InviteCode.generate()
        let now = now()
        let id = UUID()
        let record = InviteRecord(
            id: id, codeHash: code.hash, uses: uses, createdAt: now, expiresAt: now.addingTimeInterval(lifetime))
        try await database.write { db in
            try await record.create(on: db)
            try await AdminAudit.record(
                .createInvite, target: "invite \(id.canonicalString)", detail: "\(uses) uses", actor: actor, at: now,
                on: db)
        }
        return (code.display, Invite(record, now: now))
    }

    /// Every invite, newest first.
    func list() async throws -> [Invite] {
        let now = now()
        return try await InviteRecord.query(on: database.db).sort(\.$createdAt, .descending).all()
            .map { Invite($0, now: now) }
    }

    /// Revokes an invite; false if there is none with that id.
    func revoke(_ id: UUID, actor: String) async throws -> Bool {
        let now = now()
        return try await database.write { db in
            guard let record = try await InviteRecord.find(id, on: db) else { return false }
            if record.revokedAt == nil {
                record.revokedAt = now
                try await record.update(on: db)
                try await AdminAudit.record(
                    .revokeInvite, target: "invite \(id.canonicalString)", actor: actor, at: now, on: db)
            }
            return true
        }
    }

    /// Spends one use of `typed` in the sign-up's transaction: one statement, so concurrent
    /// sign-ups never spend a use twice (SQLite runs one writer; PostgreSQL locks the row).
    static func spend(_ typed: String, on db: any Database, now: Date) async throws {
        guard let code = InviteCode(typed: typed) else { throw invalid }
        typealias Column = InviteRecord.Column
        let row = try await RelayDatabase.sql(db).raw(
            """
            UPDATE \(ident: InviteRecord.schema)
            SET \(ident: Column.usesLeft) = \(ident: Column.usesLeft) - 1, \(ident: Column.used) = \(ident: Column.used) + 1
            WHERE \(ident: Column.codeHash) = \(bind: code.hash) AND \(ident: Column.usesLeft) > 0
              AND \(ident: Column.revokedAt) IS NULL AND \(ident: Column.expiresAt) > \(bind: now)
            RETURNING \(ident: Column.id)
            """
        ).first()
        guard row != nil else { throw invalid }
    }

    private static let invalid = APIFailure(
        .inviteInvalid,
        "This invite code is not valid: it may be mistyped, used up, expired or revoked. Ask the server's operator for a new one."
    )
}

/// One invite, as the operator sees it (never its code).
public struct Invite: Sendable, Equatable, Encodable {
    /// Whether an invite still lets someone sign up.
    public enum State: String, Sendable, Encodable {
        case active
        case usedUp = "used up"
        case expired
        case revoked
    }

    /// What `invite revoke` names it by.
    public let id: UUID
    /// Sign-ups it still allows.
    public let usesLeft: Int
    /// Sign-ups it made.
    public let used: Int
    /// When it was made.
    public let createdAt: Date
    /// When it stops working.
    public let expiresAt: Date?
    /// Whether it still works, and if not why.
    public let state: State

    init(_ record: InviteRecord, now: Date) {
        id = record.id ?? UUID()
        usesLeft = record.usesLeft
        used = record.used
        createdAt = record.createdAt
        expiresAt = record.expiresAt
        state =
            if record.revokedAt != nil { .revoked } else if record.usesLeft <= 0 {
                .usedUp
            } else if let expires = record.expiresAt, expires <= now { .expired } else { .active }
    }
}
