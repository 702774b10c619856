import Fluent
import Foundation

/// An uploaded encrypted attachment or named backup object; the bytes live in `<data-dir>/blobs/<id>`.
final class BlobRecord: Model, @unchecked Sendable {
    static let schema = "blobs"

    @ID(key: .id) var id: UUID?
    @Field(key: "owner_id") var ownerID: UUID
    @Field(key: "size") var size: Int64
    @Field(key: "sha256") var sha256: String
    @Field(key: "created_at") var createdAt: Date
    /// Set for backup objects: unique per owner (`/v1/backup/objects/{name}`).
    @OptionalField(key: "backup_name") var backupName: String?

    init() {}

    init(id: UUID, ownerID: UUID, size: Int64, sha256: String, createdAt: Date, backupName: String? = nil) {
        self.id = id
        self.ownerID = ownerID
        self.size = size
        self.sha256 = sha256
        self.createdAt = createdAt
        self.backupName = backupName
    }
}

/// A capability to read one blob, usable only by the recipient it names. Stored hashed.
final class BlobGrantRecord: Model, @unchecked Sendable {
    static let schema = "blob_grants"

    @ID(key: .id) var id: UUID?
    @Field(key: "blob_id") var blobID: UUID
    @Field(key: "recipient_id") var recipientID: UUID
    @Field(key: "capability_hash") var capabilityHash: Data
    @Field(key: "created_at") var createdAt: Date

    init() {}

    init(blobID: UUID, recipientID: UUID, capabilityHash: Data, createdAt: Date) {
        self.id = UUID()
        self.blobID = blobID
        self.recipientID = recipientID
        self.capabilityHash = capabilityHash
        self.createdAt = createdAt
    }
}
