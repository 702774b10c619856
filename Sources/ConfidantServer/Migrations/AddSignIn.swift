import Fluent

/// Version 3: first and last names, sign-in settings, transactions and known addresses.
struct AddSignIn: AsyncMigration {
    var name: String { "confidant.v3.sign-in" }

    func prepare(on database: any Database) async throws {
        typealias User = UserRecord.Column
        typealias Settings = AuthSettingsRecord.Column
        typealias Transaction = SignInTransactionRecord.Column
        typealias Address = SignInAddressRecord.Column
        // One column per statement: SQLite adds columns one at a time.
        try await database.schema(UserRecord.schema).field(.string(User.firstName), .string).update()
        try await database.schema(UserRecord.schema).field(.string(User.lastName), .string).update()
        try await database.schema(AuthSettingsRecord.schema)
            .field(
                .string(Settings.userID), .uuid, .identifier(auto: false),
                .references(UserRecord.schema, .id, onDelete: .cascade)
            )
            .field(.string(Settings.chain), .string, .required)
            .field(.string(Settings.operands), .int, .required)
            .field(.string(Settings.codeLength), .int, .required)
            .field(.string(Settings.sealedMapping), .data)
            .field(.string(Settings.sealedTOTPSecret), .data)
            .field(.string(Settings.totpLastStep), .int64)
            .field(.string(Settings.updatedAt), .datetime, .required)
            .create()
        try await database.schema(SignInTransactionRecord.schema)
            .id()
            .field(.string(Transaction.tokenHash), .data, .required)
            .field(.string(Transaction.userID), .uuid, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field(.string(Transaction.email), .string, .required)
            .field(.string(Transaction.identity), .data, .required)
            .field(.string(Transaction.address), .string, .required)
            .field(.string(Transaction.steps), .string, .required)
            .field(.string(Transaction.stepIndex), .int, .required)
            .field(.string(Transaction.challenge), .data)
            .field(.string(Transaction.codeSentAt), .datetime)
            .field(.string(Transaction.attempts), .int, .required)
            .field(.string(Transaction.expiresAt), .datetime, .required)
            .unique(on: .string(Transaction.tokenHash))
            .create()
        try await database.schema(SignInAddressRecord.schema)
            .id()
            .field(.string(Address.userID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field(.string(Address.address), .string, .required)
            .field(.string(Address.lastSeen), .datetime, .required)
            .unique(on: .string(Address.userID), .string(Address.address))
            .create()
    }

    func revert(on database: any Database) async throws {
        for schema in [SignInAddressRecord.schema, SignInTransactionRecord.schema, AuthSettingsRecord.schema] {
            try await database.schema(schema).delete()
        }
        try await database.schema(UserRecord.schema).deleteField(.string(UserRecord.Column.lastName)).update()
        try await database.schema(UserRecord.schema).deleteField(.string(UserRecord.Column.firstName)).update()
    }
}
