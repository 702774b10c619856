import Fluent
import SQLKit

/// Version 4: prekeys for v2 sessions (docs/PROTOCOL.md §9). One table for the three kinds; a
/// device's one-time prekeys are deleted as they are handed out.
struct AddPrekeys: AsyncMigration {
    var name: String { "confidant.v4.prekeys" }

    func prepare(on database: any Database) async throws {
        typealias Column = PrekeyTable.Column
        try await database.schema(PrekeyTable.name)
            .field(.string(Column.id), .int64, .identifier(auto: true))
            .field(.string(Column.userID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field(.string(Column.deviceID), .uuid, .required)
            .field(.string(Column.kind), .string, .required)
            .field(.string(Column.keyID), .int64, .required)
            .field(.string(Column.publicKey), .data, .required)
            .field(.string(Column.signature), .data)
            .field(.string(Column.createdAt), .datetime, .required)
            .unique(on: .string(Column.userID), .string(Column.deviceID), .string(Column.kind), .string(Column.keyID))
            .create()
        // Set when a device was sent a low-water notice; cleared by its next upload.
        try await database.schema(DeviceRecord.schema).field(
            .string(DeviceRecord.Column.prekeysLowNoticedAt), .datetime
        ).update()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(DeviceRecord.schema).deleteField(.string(DeviceRecord.Column.prekeysLowNoticedAt))
            .update()
        try await database.schema(PrekeyTable.name).delete()
    }
}
