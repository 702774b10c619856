import Fluent
import Foundation

/// What one maintenance run removed, by kind (`RelayServer.runMaintenance`; the metrics count
/// them as `confidant_maintenance_removed_total{kind}`).
public struct MaintenanceReport: Sendable, Equatable {
    /// Unacknowledged mailbox entries past `mailboxRetention`.
    public var mailboxEntries = 0
    /// Records of sent message ids as old (a retry after that is a new message).
    public var sentMessageRecords = 0
    /// Sign-in transactions and device challenges past their expiry.
    public var signInRecords = 0
    /// Accounts whose address no sign-in proved within `unverifiedAccountLifetime`.
    public var unverifiedAccounts = 0
    /// Attachments past `attachmentRetention` that some device never fetched.
    public var attachments = 0
    /// Audit entries past `auditRetention`.
    public var auditEntries = 0
    /// Blobs whose bytes no record refers to: uploads cut off with their process.
    public var strayBlobs = 0

    /// Nothing removed.
    public init() {}

    /// Each count with its metric label.
    var byKind: [(kind: String, count: Int)] {
        [
            ("mailbox_entries", mailboxEntries), ("sent_message_records", sentMessageRecords),
            ("sign_in_records", signInRecords), ("unverified_accounts", unverifiedAccounts),
            ("attachments", attachments), ("audit_entries", auditEntries), ("stray_blobs", strayBlobs),
        ]
    }
}

extension RelayServer {
    /// What runs every `maintenanceInterval`: deletes mailbox entries past their retention and
    /// the records of sent message ids as old, expired sign-in transactions and device
    /// challenges, accounts never verified, audit entries past `auditRetention`, old rate-limit
    /// windows, PostgreSQL's mailbox counts of devices no longer current, and attachments past
    /// theirs. Returns what it removed.
    @discardableResult
    public func runMaintenance() async throws -> MaintenanceReport {
        let configuration = configuration
        let now = configuration.now()
        let unverifiedBefore = now.addingTimeInterval(-configuration.unverifiedAccountLifetime)
        let auditBefore = configuration.auditRetention.map { now.addingTimeInterval(-$0) }
        let mailboxEntries = try await services.mailbox.purgeExpired()
        let postgres = services.database.isPostgres
        let postedBefore = now.addingTimeInterval(-configuration.mailboxRetention)
        var report = try await services.database.write { db -> MaintenanceReport in
            var report = MaintenanceReport()
            report.sentMessageRecords = try await PostedMessageTable.deleteReceived(before: postedBefore, on: db)
            let transactions = SignInTransactionRecord.query(on: db).filter(\.$expiresAt < now)
            let challenges = UsedChallengeRecord.query(on: db).filter(\.$expiresAt < now)
            report.signInRecords = try await transactions.count() + challenges.count()
            try await transactions.delete()
            try await challenges.delete()
            // Accounts whose address was never proved: the address is free again.
            let unverified = UserRecord.query(on: db).filter(\.$emailVerifiedAt == nil)
                .filter(\.$createdAt < unverifiedBefore)
            report.unverifiedAccounts = try await unverified.count()
            try await unverified.delete()
            if let auditBefore {
                let old = AuditRecord.query(on: db).filter(\.$at < auditBefore)
                report.auditEntries = try await old.count()
                try await old.delete()
            }
            try await RateLimit.purge(before: now.addingTimeInterval(-86_400), on: db)
            if postgres { try await MailboxCountTable.deleteStale(on: RelayDatabase.sql(db)) }
            // Bodies whose entries went without an acknowledgement (their account deleted), or
            // whose last two were acknowledged at once on two PostgreSQL connections.
            _ = try await SharedBodyTable.deleteOrphans(on: db)
            return report
        }
        report.mailboxEntries = mailboxEntries
        report.attachments = try await services.blobs.purge(
            createdBefore: now.addingTimeInterval(-configuration.attachmentRetention))
        // A stopped upload writes nothing for an hour only when its process is gone.
        report.strayBlobs = try await services.store.sweep(before: now.addingTimeInterval(-3600))
        metrics?.maintained(report)
        return report
    }
}
