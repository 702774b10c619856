import ConfidantAPI
import Fluent
import FluentSQL
import Foundation
import OpenAPIRuntime
import SQLKit

/// Named backup objects: blobs with a per-owner name, readable only by their owner, so a vault
/// backup can find its manifest, catalogue and objects again by name.
struct BackupObjectService: Sendable {
    let database: RelayDatabase
    let store: any BlobStore
    let maximumBytes: Int64
    let quota: StorageQuota
    let now: @Sendable () -> Date

    static func name(_ text: String) throws(APIFailure) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
        guard (1...200).contains(text.count), !text.hasPrefix("."), text.allSatisfy({ allowed.contains($0) }) else {
            throw APIFailure.malformed(
                "A backup object name is 1–200 characters of A–Z, a–z, 0–9, '.', '_' and '-', not starting with '.'.")
        }
        return text
    }

    private static func object(named name: String, owner: UUID, on db: any Database) async throws -> BlobRecord? {
        try await BlobRecord.query(on: db).filter(\.$ownerID == owner).filter(\.$backupName == name).first()
    }

    /// Stores (or atomically replaces) the owner's object called `name`.
    func put(_ body: HTTPBody, name: String, owner: UUID) async throws -> StoredBlob {
        // The object it replaces counts as free: a new manifest over an old one needs no room.
        let replacing = try await Self.object(named: name, owner: owner, on: database.db)?.size ?? 0
        let remaining = try await quota.remaining(for: owner, cap: maximumBytes, on: database.db) + replacing
        let stored: StoredBlob
        do {
            stored = try await store.store(
                body, limit: min(maximumBytes, remaining), what: "The backup object", owner: owner)
        } catch let failure as APIFailure where failure.code == .tooLarge && remaining < maximumBytes {
            throw StorageQuota.exceeded(quota.bytes)
        }
        let quota = quota
        let record = BlobRecord(
            id: stored.id, ownerID: owner, size: stored.size, sha256: stored.sha256, createdAt: now(), backupName: name)
        let replaced: UUID?
        do {
            // The new object replaces the old one in one transaction: a reader sees one or the other.
            replaced = try await database.write { db -> UUID? in
                let old = try await Self.object(named: name, owner: owner, on: db)
                try await quota.check(adding: stored.size, freeing: old?.size ?? 0, for: owner, on: db)
                if let old { try await old.delete(on: db) }
                try await record.create(on: db)
                return old?.id
            }
        } catch {
            await store.remove([stored.id])
            if let error = error as? any DatabaseError, error.isConstraintFailure {
                throw APIFailure(.conflict, "Another upload of \(name) finished at the same time; try again.")
            }
            throw error
        }
        if let replaced { await store.remove([replaced]) }
        return stored
    }

    func get(_ name: String, owner: UUID) async throws -> HTTPBody {
        guard let blob = try await Self.object(named: name, owner: owner, on: database.db) else {
            throw APIFailure.notFound("That backup object")
        }
        return try await store.body(of: blob)
    }

    /// The owner's objects whose names start with `prefix`, by name, after `after`; at most
    /// `limit`, and whether there are more.
    func list(prefix: String, after: String?, limit: Int, owner: UUID) async throws -> (
        objects: [BlobRecord], hasMore: Bool
    ) {
        let column = BlobRecord.Column.backupName
        // A prefix comparison by substring: exact and case-sensitive on SQLite and PostgreSQL
        // alike (LIKE is case-insensitive on SQLite and would need its wildcards escaped).
        var query = BlobRecord.query(on: database.db).filter(\.$ownerID == owner).filter(\.$backupName != nil)
        if !prefix.isEmpty {
            // (The length is an integer we computed, written in; a bound one would be a bigint,
            // which PostgreSQL's substr does not take.)
            query = query.filter(
                .sql(embed: "substr(\(ident: column), 1, \(unsafeRaw: String(prefix.utf8.count))) = \(bind: prefix)"))
        }
        // Byte order on both engines (PostgreSQL's default collation would follow the locale),
        // so that pages after a name neither skip nor repeat.
        let ordered: SQLQueryString =
            database.isPostgres ? "\(ident: column) COLLATE \"C\"" : "\(ident: column)"
        if let after { query = query.filter(.sql(embed: "\(ordered) > \(bind: after)")) }
        let rows = try await query.sort(.sql(embed: ordered)).limit(limit + 1).all()
        return (Array(rows.prefix(limit)), rows.count > limit)
    }

    func exists(_ name: String, owner: UUID) async throws -> Bool {
        try await Self.object(named: name, owner: owner, on: database.db) != nil
    }

    func delete(_ name: String, owner: UUID) async throws {
        let removed = try await database.write { db -> UUID? in
            guard let blob = try await Self.object(named: name, owner: owner, on: db) else { return nil }
            try await BlobGrantRecord.query(on: db).filter(\.$blobID == blob.requireID()).delete()
            try await blob.delete(on: db)
            return blob.id
        }
        guard let removed else { throw APIFailure.notFound("That backup object") }
        await store.remove([removed])
    }
}
