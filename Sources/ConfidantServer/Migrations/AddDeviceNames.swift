import Fluent

/// Version 12: a device's name and when it was last active, for its own account's device list.
struct AddDeviceNames: AsyncMigration {
    var name: String { "confidant.v12.device_names" }

    private typealias Column = DeviceRecord.Column

    func prepare(on database: any Database) async throws {
        try await database.schema(DeviceRecord.schema).field(.string(Column.name), .string).update()
        try await database.schema(DeviceRecord.schema).field(.string(Column.lastSeenAt), .datetime).update()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(DeviceRecord.schema).deleteField(.string(Column.lastSeenAt)).update()
        try await database.schema(DeviceRecord.schema).deleteField(.string(Column.name)).update()
    }
}
