import Fluent

/// Version 14: disabled accounts and the audit of administrative actions.
struct AddAdministration: AsyncMigration {
    var name: String { "confidant.v14.administration" }

    private typealias Audit = AuditRecord.Column

    func prepare(on database: any Database) async throws {
        try await database.schema(UserRecord.schema).field(.string(UserRecord.Column.disabledAt), .datetime).update()
        try await database.schema(AuditRecord.schema)
            .field(.string(Audit.sequence), .int64, .identifier(auto: true))
            .field(.string(Audit.at), .datetime, .required)
            .field(.string(Audit.actor), .string, .required)
            .field(.string(Audit.action), .string, .required)
            .field(.string(Audit.target), .string, .required)
            .field(.string(Audit.detail), .string)
            .field(.string(Audit.revocation), .string)
            .create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(AuditRecord.schema).delete()
        try await database.schema(UserRecord.schema).deleteField(.string(UserRecord.Column.disabledAt)).update()
    }
}
