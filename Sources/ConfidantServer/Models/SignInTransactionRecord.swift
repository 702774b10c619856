import Fluent
import Foundation

/// A sign-in in progress: its steps, where it is, and the current challenge. Found by the SHA-256
/// of its id, which only the client holds.
final class SignInTransactionRecord: Model, @unchecked Sendable {
    static let schema = "sign_in_transactions"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let tokenHash = "token_hash"
        static let userID = "user_id"
        static let email = "email"
        static let identity = "identity"
        static let address = "address"
        static let steps = "steps"
        static let stepIndex = "step_index"
        static let challenge = "challenge"
        static let codeSentAt = "code_sent_at"
        static let attempts = "attempts"
        static let expiresAt = "expires_at"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.tokenHash)) var tokenHash: Data
    /// Nil for an e-mail without an account: the transaction runs the same way and always fails.
    @OptionalField(key: .string(Column.userID)) var userID: UUID?
    @Field(key: .string(Column.email)) var email: String
    @Field(key: .string(Column.identity)) var identity: Data
    @Field(key: .string(Column.address)) var address: String
    @Field(key: .string(Column.steps)) var steps: String
    @Field(key: .string(Column.stepIndex)) var stepIndex: Int
    /// The current challenge: an arithmetic expression, or the SHA-256 of an e-mail code.
    @OptionalField(key: .string(Column.challenge)) var challenge: Data?
    @OptionalField(key: .string(Column.codeSentAt)) var codeSentAt: Date?
    @Field(key: .string(Column.attempts)) var attempts: Int
    @Field(key: .string(Column.expiresAt)) var expiresAt: Date

    init() {}

    init(tokenHash: Data, userID: UUID?, email: String, identity: Data, address: String, steps: String, expiresAt: Date)
    {
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
