import Fluent
import Foundation

/// How one account signs in. The arithmetic mapping and the TOTP secret are sealed (`AuthSecrets`).
final class AuthSettingsRecord: Model, @unchecked Sendable {
    static let schema = "auth_settings"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let userID = "user_id"
        static let chain = "chain"
        static let operands = "operands"
        static let codeLength = "code_length"
        static let sealedMapping = "sealed_mapping"
        static let sealedTOTPSecret = "sealed_totp_secret"
        static let totpLastStep = "totp_last_step"
        static let updatedAt = "updated_at"
    }

    @ID(custom: .string(Column.userID), generatedBy: .user) var id: UUID?
    /// Comma-separated `SignInMethod` raw values, in order.
    @Field(key: .string(Column.chain)) var chain: String
    @Field(key: .string(Column.operands)) var operands: Int
    @Field(key: .string(Column.codeLength)) var codeLength: Int
    @OptionalField(key: .string(Column.sealedMapping)) var sealedMapping: Data?
    @OptionalField(key: .string(Column.sealedTOTPSecret)) var sealedTOTPSecret: Data?
    /// The last TOTP time step accepted, so a code is never used twice.
    @OptionalField(key: .string(Column.totpLastStep)) var totpLastStep: Int64?
    @Field(key: .string(Column.updatedAt)) var updatedAt: Date

    init() {}

    init(userID: UUID, now: Date) {
        id = userID
        chain = "password"
        operands = 4
        codeLength = 6
        updatedAt = now
    }
}
