import Crypto
import Fluent
import Foundation
import SQLKit

/// Version 7: which devices still have to fetch each attachment (the blob is deleted once they
/// all have it), and a digest of each profile picture, so that clients cache pictures by it.
struct AddAttachments: AsyncMigration {
    var name: String { "confidant.v7.attachments" }

    func prepare(on database: any Database) async throws {
        typealias Fetch = BlobFetchTable.Column
        try await database.schema(BlobFetchTable.name)
            .field(.string(Fetch.blobID), .uuid, .required, .references(BlobRecord.schema, .id, onDelete: .cascade))
            .field(.string(Fetch.userID), .uuid, .required)
            .field(.string(Fetch.deviceID), .uuid, .required)
            .unique(on: .string(Fetch.blobID), .string(Fetch.userID), .string(Fetch.deviceID))
            .create()
        try await database.schema(UserRecord.schema).field(.string(UserRecord.Column.avatarDigest), .string).update()
        // Only the columns this version has: later versions add more to the model.
        for user in try await UserRecord.query(on: database).field(\.$id).field(\.$avatar).filter(\.$avatar != nil)
            .all()
        {
            guard let id = user.id, let avatar = user.avatar else { continue }
            try await UserRecord.query(on: database).filter(\.$id == id)
                .set(\.$avatarDigest, to: AvatarImage.digest(of: avatar)).update()
        }
    }

    func revert(on database: any Database) async throws {
        try await database.schema(UserRecord.schema).deleteField(.string(UserRecord.Column.avatarDigest)).update()
        try await database.schema(BlobFetchTable.name).delete()
    }
}
