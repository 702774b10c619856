import Fluent
import Foundation
import Logging

/// Sessions that another process on the same SQLite file ended (`confidant admin account
/// disable` while the server runs): SQLite has no NOTIFY, so the server reads the audit's new
/// revocations every `interval` and applies them as PostgreSQL's listener does. The position
/// starts at the audit's end, since earlier revocations are already in the sessions table.
struct RevocationFeed: Sendable {
    let database: RelayDatabase
    let cache: SessionCache
    let hub: MailboxHub
    let logger: Logger

    /// Runs until cancelled.
    func run(every interval: Duration) async {
        var position: Int64?
        while !Task.isCancelled {
            do {
                if let seen = position {
                    position = try await apply(after: seen)
                } else {
                    position = try await end()
                }
            } catch {
                // The next read catches up: the position did not move.
                logger.debug("could not read the audit's revocations", metadata: ["error": "\(error)"])
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    /// The audit's last sequence number.
    func end() async throws -> Int64 {
        try await AuditRecord.query(on: database.db).max(\.$id) ?? 0
    }

    /// Applies the revocations recorded after `position`; the new position.
    func apply(after position: Int64) async throws -> Int64 {
        let records = try await AuditRecord.query(on: database.db).filter(\.$id > position).sort(\.$id).limit(1_000)
            .all()
        for record in records {
            guard let text = record.revocation, let revocation = Revocation(notification: text) else { continue }
            SessionRevoker.apply(revocation, cache: cache, hub: hub)
        }
        return records.last?.id ?? position
    }
}
