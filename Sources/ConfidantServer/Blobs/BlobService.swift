import ConfidantAPI
import Fluent
import Foundation
import OpenAPIRuntime

/// Encrypted attachments: uploaded by their owner, readable by the owner and by each recipient
/// the owner grants a capability to; to anyone else they do not exist.
struct BlobService: Sendable {
    let database: RelayDatabase
    let files: BlobFiles
    let maximumBytes: Int
    let quota: StorageQuota
    let now: @Sendable () -> Date

    func upload(_ body: HTTPBody, by owner: UUID) async throws -> BlobFiles.Stored {
        let remaining = try await quota.remaining(for: owner, cap: Int64(maximumBytes), on: database.db)
        let stored: BlobFiles.Stored
        do {
            stored = try await files.store(body, limit: remaining, what: "The blob")
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
            files.remove(stored.id)
            throw error
        }
        return stored
    }

    /// The blob's bytes, for its owner or a recipient holding a capability granted to them.
    func download(_ blobID: UUID, by caller: UUID, capability: String?) async throws -> HTTPBody {
        guard let blob = try await BlobRecord.find(blobID, on: database.db) else {
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
        return try files.body(of: blob)
    }

    func delete(_ blobID: UUID, by owner: UUID) async throws {
        try await database.write { db in
            guard let blob = try await BlobRecord.find(blobID, on: db), blob.ownerID == owner else {
                throw APIFailure.notFound("That blob")
            }
            try await BlobGrantRecord.query(on: db).filter(\.$blobID == blobID).delete()
            try await blob.delete(on: db)
        }
        files.remove(blobID)
    }

    /// A new capability for `recipient` to read the owner's blob; only its hash is stored.
    func grant(_ blobID: UUID, by owner: UUID, to recipient: UUID) async throws -> SessionToken {
        let capability = SessionToken.generate()
        let now = now()
        try await database.write { db in
            guard let blob = try await BlobRecord.find(blobID, on: db), blob.ownerID == owner else {
                throw APIFailure.notFound("That blob")
            }
            guard try await UserRecord.find(recipient, on: db) != nil else {
                throw APIFailure.notFound("That recipient")
            }
            try await BlobGrantRecord(
                blobID: blobID, recipientID: recipient, capabilityHash: capability.hash, createdAt: now
            ).create(on: db)
        }
        return capability
    }
}
