import Fluent

/// Version 11: invite codes for sign-up by invite only.
struct AddInvites: AsyncMigration {
    var name: String { "confidant.v11.invites" }

    private typealias Column = InviteRecord.Column

    func prepare(on database: any Database) async throws {
        try await database.schema(InviteRecord.schema)
            .field(.string(Column.id), .uuid, .identifier(auto: false))
            .field(.string(Column.codeHash), .data, .required)
            .field(.string(Column.usesLeft), .int, .required)
            .field(.string(Column.used), .int, .required)
            .field(.string(Column.createdAt), .datetime, .required)
            .field(.string(Column.expiresAt), .datetime)
            .field(.string(Column.revokedAt), .datetime)
            .unique(on: .string(Column.codeHash))
            .create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(InviteRecord.schema).delete()
    }
}
