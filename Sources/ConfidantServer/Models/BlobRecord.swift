import Fluent
import Foundation

/// An uploaded encrypted attachment or named backup object; the bytes live in `<data-dir>/blobs/<id>`.
final class BlobRecord: Model, @unchecked Sendable {
    static let schema = "blobs"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let ownerID = "owner_id"
        static let size = "size"
        static let sha256 = "sha256"
        static let createdAt = "created_at"
        static let backupName = "backup_name"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.ownerID)) var ownerID: UUID
    @Field(key: .string(Column.size)) var size: Int64
    @Field(key: .string(Column.sha256)) var sha256: String
    @Field(key: .string(Column.createdAt)) var createdAt: Date
    /// Set for backup objects: unique per owner (`/v1/backup/objects/{name}`).
    @OptionalField(key: .string(Column.backupName)) var backupName: String?

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

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let blobID = "blob_id"
        static let recipientID = "recipient_id"
        static let capabilityHash = "capability_hash"
        static let createdAt = "created_at"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.blobID)) var blobID: UUID
    @Field(key: .string(Column.recipientID)) var recipientID: UUID
    @Field(key: .string(Column.capabilityHash)) var capabilityHash: Data
    @Field(key: .string(Column.createdAt)) var createdAt: Date

    init() {}

    init(blobID: UUID, recipientID: UUID, capabilityHash: Data, createdAt: Date) {
        self.id = UUID()
        self.blobID = blobID
        self.recipientID = recipientID
        self.capabilityHash = capabilityHash
        self.createdAt = createdAt
    }
}

/// A device an attachment was meant for that has not confirmed it has the blob yet. Rows are
/// made when the owner grants the blob (the recipient's current devices and the owner's other
/// ones) and removed as each device confirms; the blob goes when none is left.
enum BlobFetchTable {
    static let name = "blob_fetches"

    /// Column names, for the migration and the SQL alike.
    enum Column {
        static let blobID = "blob_id"
        static let userID = "user_id"
        static let deviceID = "device_id"
    }
}
