import ConfidantAPI
import Fluent
import Foundation
import OpenAPIRuntime
import SQLKit

/// Encrypted attachments: uploaded by their owner, readable by the owner and by each recipient
/// the owner grants a capability to; to anyone else they do not exist. An attachment goes once
/// every device it was granted for confirmed it has it, or after the retention period.
struct BlobService: Sendable {
    let database: RelayDatabase
    let store: any BlobStore
    let maximumBytes: Int
    let quota: StorageQuota
    let now: @Sendable () -> Date

    func upload(_ body: HTTPBody, by owner: UUID) async throws -> StoredBlob {
        let remaining = try await quota.remaining(for: owner, cap: Int64(maximumBytes), on: database.db)
        let stored: StoredBlob
        do {
            stored = try await store.store(body, limit: remaining, what: "The blob", owner: owner)
        } catch let failure as APIFailure where failure.code == .tooLarge && remaining < Int64(maximumBytes) {
            throw StorageQuota.exceeded(quota.bytes)
        }
        let record = BlobRecord(
            id: stored.id, ownerID: owner, size: stored.size, sha256: stored.sha256, createdAt: now())
        let quota = quota
        do {
            try await database.write { db in
                try await quota.check(adding: stored.size, for: owner, on: db)
                try await record.create(on: db)
            }
        } catch {
            await store.remove([stored.id])
            throw error
        }
        return stored
    }

    /// The blob's bytes, for its owner or a recipient holding a capability granted to them.
    func download(_ blobID: UUID, by caller: UUID, capability: String?) async throws -> HTTPBody {
        try await store.body(of: try await readable(blobID, by: caller, capability: capability))
    }

    /// The blob, when `caller` owns it or holds a capability granted to them; else "not found".
    private func readable(_ blobID: UUID, by caller: UUID, capability: String?) async throws -> BlobRecord {
        guard let blob = try await BlobRecord.find(blobID, on: database.db), blob.backupName == nil else {
            throw APIFailure.notFound("That blob")
        }
        if blob.ownerID != caller {
            // Without a capability granted to this very caller the blob "does not exist".
            guard let capability,
                try await BlobGrantRecord.query(on: database.db).filter(\.$blobID == blobID)
                    .filter(\.$capabilityHash == SessionToken.hash(capability)).filter(\.$recipientID == caller).first()
                    != nil
            else { throw APIFailure.notFound("That blob") }
        }
        return blob
    }

    /// The caller's device has the blob; when no device it was granted for is left, it goes.
    func fetched(_ blobID: UUID, by caller: Caller, capability: String?) async throws {
        _ = try await readable(blobID, by: caller.userID, capability: capability)
        typealias Fetch = BlobFetchTable.Column
        let gone = try await database.write { db -> Bool in
            let sql = try RelayDatabase.sql(db)
            try await sql.delete(from: BlobFetchTable.name)
                .where(Fetch.blobID, .equal, UUIDValue(blobID)).where(Fetch.userID, .equal, UUIDValue(caller.userID))
                .where(Fetch.deviceID, .equal, UUIDValue(caller.deviceID)).run()
            let waiting =
                try await sql.select().column(SQLFunction("COUNT", args: SQLLiteral.all), as: "n")
                .from(BlobFetchTable.name).where(Fetch.blobID, .equal, UUIDValue(blobID))
                .first(decodingColumn: "n", as: Int.self) ?? 0
            let granted = try await BlobGrantRecord.query(on: db).filter(\.$blobID == blobID).count()
            guard waiting == 0, granted > 0 else { return false }
            try await BlobGrantRecord.query(on: db).filter(\.$blobID == blobID).delete()
            try await BlobRecord.query(on: db).filter(\.$id == blobID).delete()
            return true
        }
        if gone { await store.remove([blobID]) }
    }

    /// Deletes attachments uploaded before `date` (a device never fetched them; backup objects
    /// are not attachments and stay); how many.
    func purge(createdBefore date: Date) async throws -> Int {
        let ids = try await database.write { db -> [UUID] in
            let old = try await BlobRecord.query(on: db).filter(\.$backupName == nil).filter(\.$createdAt < date)
                .all()
            let ids = old.compactMap(\.id)
            guard !ids.isEmpty else { return [] }
            try await BlobGrantRecord.query(on: db).filter(\.$blobID ~~ ids).delete()
            try await BlobRecord.query(on: db).filter(\.$id ~~ ids).delete()
            return ids
        }
        await store.remove(ids)
        return ids.count
    }

    /// Bytes stored: of attachments (`backups` false), of backup objects (true) or of both (nil),
    /// of `owner` or of everyone. In SQL: PostgreSQL's SUM of a BIGINT is a NUMERIC, which
    /// Fluent's `sum` cannot read as an integer.
    static func storedBytes(backups: Bool? = nil, of owner: UUID? = nil, on sql: any SQLDatabase) async throws -> Int64
    {
        typealias Column = BlobRecord.Column
        var select = sql.select()
            .column(SQLFunction("CAST", args: SQLRaw("COALESCE(SUM(\(Column.size)), 0) AS BIGINT")), as: "total")
            .from(BlobRecord.schema)
        if let backups { select = select.where(SQLColumn(Column.backupName), backups ? .isNot : .is, SQLLiteral.null) }
        if let owner { select = select.where(Column.ownerID, .equal, UUIDValue(owner)) }
        return try await select.first()?.decode(column: "total", as: Int64.self) ?? 0
    }

    func delete(_ blobID: UUID, by owner: UUID) async throws {
        try await database.write { db in
            guard let blob = try await BlobRecord.find(blobID, on: db), blob.ownerID == owner else {
                throw APIFailure.notFound("That blob")
            }
            try await BlobGrantRecord.query(on: db).filter(\.$blobID == blobID).delete()
            try await blob.delete(on: db)
        }
        await store.remove([blobID])
    }

    /// A new capability for `recipient` to read the owner's blob; only its hash is stored. The
    /// recipient's current devices and the owner's other ones are then expected to fetch it.
    func grant(_ blobID: UUID, by owner: Caller, to recipient: UUID) async throws -> SessionToken {
        let capability = SessionToken.generate()
        let now = now()
        typealias Fetch = BlobFetchTable.Column
        try await database.write { db in
            guard let blob = try await BlobRecord.find(blobID, on: db), blob.ownerID == owner.userID,
                blob.backupName == nil
            else {
                throw APIFailure.notFound("That blob")
            }
            guard try await UserRecord.find(recipient, on: db) != nil else {
                throw APIFailure.notFound("That recipient")
            }
            try await BlobGrantRecord(
                blobID: blobID, recipientID: recipient, capabilityHash: capability.hash, createdAt: now
            ).create(on: db)
            let devices = try await DeviceRecord.query(on: db).filter(\.$userID ~~ [recipient, owner.userID])
                .filter(\.$retiredAt == nil).all()
                .filter { $0.userID != owner.userID || $0.deviceID != owner.deviceID }
            guard !devices.isEmpty else { return }
            var insert = try RelayDatabase.sql(db).insert(into: BlobFetchTable.name)
                .columns(Fetch.blobID, Fetch.userID, Fetch.deviceID).ignoringConflicts()
            for device in devices {
                insert = insert.values(UUIDValue(blobID), UUIDValue(device.userID), UUIDValue(device.deviceID))
            }
            try await insert.run()
        }
        return capability
    }
}
