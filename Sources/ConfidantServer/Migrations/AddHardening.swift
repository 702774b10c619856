import Fluent
import SQLKit

/// Version 5: rate-limit windows (sign-in starts, prekey claims, …).
struct AddHardening: AsyncMigration {
    var name: String { "confidant.v5.hardening" }

    func prepare(on database: any Database) async throws {
        typealias Window = RateLimit.Column
        try await database.schema(RateLimit.table)
            .field(.string(Window.key), .string, .identifier(auto: false))
            .field(.string(Window.windowStart), .datetime, .required)
            .field(.string(Window.count), .int, .required)
            .create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(RateLimit.table).delete()
    }
}
