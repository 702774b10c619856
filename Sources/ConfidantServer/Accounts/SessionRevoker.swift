import Fluent
import Foundation
import SQLKit

/// Makes ended sessions stop working everywhere at once: this instance's session cache forgets
/// them and their open streams close; on PostgreSQL, a NOTIFY tells the other instances
/// (`PostgresMailboxListener`) to do the same.
struct SessionRevoker: Sendable {
    let cache: SessionCache
    let hub: MailboxHub
    let database: RelayDatabase

    /// Call after the transaction that revoked the sessions has committed.
    func revoked(_ revocation: Revocation) async {
        Self.apply(revocation, cache: cache, hub: hub)
        guard database.isPostgres, let sql = database.db as? any SQLDatabase else { return }
        do {
            try await sql.raw(
                "SELECT pg_notify(\(bind: PostgresMailboxListener.channel), \(bind: revocation.notification))"
            ).run()
        } catch {
            // The other instances' caches still expire within SessionCache.lifetime; their
            // streams of the session stay open until they close (docs/SECURITY.md).
            RequestContextMiddleware.logger(or: database.db.logger).warning(
                "could not tell other instances about a revoked session", metadata: ["error": "\(error)"])
        }
    }

    /// What every instance does with a revocation, its own or another's.
    static func apply(_ revocation: Revocation, cache: SessionCache, hub: MailboxHub) {
        cache.evict(revocation)
        hub.revoke(revocation)
    }
}
