import Fluent
import Foundation

/// How one account signs in. The arithmetic mapping and the TOTP secret are sealed (`AuthSecrets`).
final class AuthSettingsRecord: Model, @unchecked Sendable {
    static let schema = "auth_settings"

    @ID(custom: "user_id", generatedBy: .user) var id: UUID?
    /// Comma-separated `SignInMethod` raw values, in order.
    @Field(key: "chain") var chain: String
    @Field(key: "operands") var operands: Int
    @Field(key: "code_length") var codeLength: Int
    @OptionalField(key: "sealed_mapping") var sealedMapping: Data?
    @OptionalField(key: "sealed_totp_secret") var sealedTOTPSecret: Data?
    /// The last TOTP time step accepted, so a code is never used twice.
    @OptionalField(key: "totp_last_step") var totpLastStep: Int64?
    @Field(key: "updated_at") var updatedAt: Date

    init() {}

    init(userID: UUID) {
        id = userID
        chain = "password"
        operands = 4
        codeLength = 6
        updatedAt = Date()
    }
}

/// A sign-in in progress: its steps, where it is, and the current challenge. Found by the SHA-256
/// of its id, which only the client holds.
final class SignInTransactionRecord: Model, @unchecked Sendable {
    static let schema = "sign_in_transactions"

    @ID(key: .id) var id: UUID?
    @Field(key: "token_hash") var tokenHash: Data
    /// Nil for an e-mail without an account: the transaction runs the same way and always fails.
    @OptionalField(key: "user_id") var userID: UUID?
    @Field(key: "email") var email: String
    @Field(key: "identity") var identity: Data
    @Field(key: "address") var address: String
    @Field(key: "steps") var steps: String
    @Field(key: "step_index") var stepIndex: Int
    /// The current challenge: an arithmetic expression, or the SHA-256 of an e-mail code.
    @OptionalField(key: "challenge") var challenge: Data?
    @OptionalField(key: "code_sent_at") var codeSentAt: Date?
    @Field(key: "attempts") var attempts: Int
    @Field(key: "expires_at") var expiresAt: Date

    init() {}

    init(tokenHash: Data, userID: UUID?, email: String, identity: Data, address: String, steps: String, expiresAt: Date) {
        id = UUID()
        self.tokenHash = tokenHash
        self.userID = userID
        self.email = email
        self.identity = identity
        self.address = address
        self.steps = steps
        stepIndex = 0
        attempts = 0
        self.expiresAt = expiresAt
    }
}

/// Addresses an account has signed in from, for the adaptive policy's "known address".
final class SignInAddressRecord: Model, @unchecked Sendable {
    static let schema = "sign_in_addresses"

    @ID(key: .id) var id: UUID?
    @Field(key: "user_id") var userID: UUID
    @Field(key: "address") var address: String
    @Field(key: "last_seen") var lastSeen: Date

    init() {}

    init(userID: UUID, address: String, lastSeen: Date) {
        id = UUID()
        self.userID = userID
        self.address = address
        self.lastSeen = lastSeen
    }
}

/// Version 3: first and last names, sign-in settings, transactions and known addresses.
struct AddSignIn: AsyncMigration {
    var name: String { "confidant.v3.sign-in" }

    func prepare(on database: any Database) async throws {
        // One column per statement: SQLite adds columns one at a time.
        try await database.schema(UserRecord.schema).field("first_name", .string).update()
        try await database.schema(UserRecord.schema).field("last_name", .string).update()
        try await database.schema(AuthSettingsRecord.schema)
            .field("user_id", .uuid, .identifier(auto: false), .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("chain", .string, .required)
            .field("operands", .int, .required)
            .field("code_length", .int, .required)
            .field("sealed_mapping", .data)
            .field("sealed_totp_secret", .data)
            .field("totp_last_step", .int64)
            .field("updated_at", .datetime, .required)
            .create()
        try await database.schema(SignInTransactionRecord.schema)
            .id()
            .field("token_hash", .data, .required)
            .field("user_id", .uuid, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("email", .string, .required)
            .field("identity", .data, .required)
            .field("address", .string, .required)
            .field("steps", .string, .required)
            .field("step_index", .int, .required)
            .field("challenge", .data)
            .field("code_sent_at", .datetime)
            .field("attempts", .int, .required)
            .field("expires_at", .datetime, .required)
            .unique(on: "token_hash")
            .create()
        try await database.schema(SignInAddressRecord.schema)
            .id()
            .field("user_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("address", .string, .required)
            .field("last_seen", .datetime, .required)
            .unique(on: "user_id", "address")
            .create()
    }

    func revert(on database: any Database) async throws {
        for schema in [SignInAddressRecord.schema, SignInTransactionRecord.schema, AuthSettingsRecord.schema] {
            try await database.schema(schema).delete()
        }
        try await database.schema(UserRecord.schema).deleteField("last_name").update()
        try await database.schema(UserRecord.schema).deleteField("first_name").update()
    }
}
