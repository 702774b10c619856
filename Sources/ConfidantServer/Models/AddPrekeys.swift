import Fluent
import SQLKit

/// Version 4: prekeys for v2 sessions (docs/PROTOCOL.md §9). One table for the three kinds; a
/// device's one-time prekeys are deleted as they are handed out.
struct AddPrekeys: AsyncMigration {
    static let schema = "prekeys"

    var name: String { "confidant.v4.prekeys" }

    func prepare(on database: any Database) async throws {
        try await database.schema(Self.schema)
            .field("id", .int64, .identifier(auto: true))
            .field("user_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("device_id", .uuid, .required)
            .field("kind", .string, .required)
            .field("key_id", .int64, .required)
            .field("public_key", .data, .required)
            .field("signature", .data)
            .field("created_at", .datetime, .required)
            .unique(on: "user_id", "device_id", "kind", "key_id")
            .create()
        // Set when a device was sent a low-water notice; cleared by its next upload.
        try await database.schema(DeviceRecord.schema).field("prekeys_low_noticed_at", .datetime).update()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(DeviceRecord.schema).deleteField("prekeys_low_noticed_at").update()
        try await database.schema(Self.schema).delete()
    }
}
