import Fluent
import Foundation
import SQLKit

/// Bytes of blobs and backup objects one account may store. An upload is bounded while it
/// streams by what is left, and checked again in the transaction that records it, so parallel
/// uploads cannot together pass the quota.
struct StorageQuota: Sendable {
    let bytes: Int64

    /// What the account's blobs and backup objects take now.
    static func used(by owner: UUID, on db: any Database) async throws -> Int64 {
        // PostgreSQL sums a bigint as a numeric: cast it back.
        let row = try await RelayDatabase.sql(db).raw(
            """
            SELECT CAST(COALESCE(SUM(\(ident: BlobRecord.Column.size)), 0) AS BIGINT) AS used FROM \(ident: BlobRecord.schema)
            WHERE \(ident: BlobRecord.Column.ownerID) = \(bind: owner)
            """
        ).first()
        return try row?.decode(column: "used", as: Int64.self) ?? 0
    }

    /// How many more bytes the account may store, at most `cap` (the largest single upload).
    func remaining(for owner: UUID, cap: Int64, on db: any Database) async throws -> Int64 {
        min(cap, max(0, bytes - (try await Self.used(by: owner, on: db))))
    }

    /// Within the transaction recording an upload of `size` bytes (which replaces `freed` bytes):
    /// refuses it when the account would be over its quota. On PostgreSQL the transaction first
    /// takes the account's advisory lock, held until it commits: at read committed, uploads that
    /// finish together would otherwise each sum the total before the others' rows. (SQLite's
    /// write transactions run one at a time.)
    func check(adding size: Int64, freeing freed: Int64 = 0, for owner: UUID, on db: any Database) async throws {
        let sql = try RelayDatabase.sql(db)
        if sql.dialect.name == "postgresql" {
            try await sql.raw(
                "SELECT pg_advisory_xact_lock(hashtextextended(\(bind: "storage quota " + owner.uuidString), 0))"
            ).run()
        }
        let used = try await Self.used(by: owner, on: db)
        guard used - freed + size <= bytes else { throw Self.exceeded(bytes) }
    }

    static func exceeded(_ quota: Int64) -> APIFailure {
        APIFailure(
            .quotaExceeded,
            """
            This account's storage is full (\(ByteCountFormatter.string(fromByteCount: quota, countStyle: .binary)) of \
            blobs and backup objects); delete some before uploading more.
            """)
    }
}
