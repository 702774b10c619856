import ConfidantAPI
import ConfidantAuth
import Fluent
import Foundation

/// How an account signs in: its chain of methods and their settings. The arithmetic mapping and
/// the TOTP secret are stored sealed (`AuthSecrets`) and never shown again.
struct SignInSettingsService: Sendable {
    /// A change, as the account's owner asks it.
    struct Change: Sendable {
        var chain: [SignInMethod]
        var operands: Int?
        var codeLength: Int?
        var mapping: String?
        var totpSecret: String?
        var totpCode: String?
    }

    let accounts: AccountService
    let secrets: AuthSecrets
    let now: @Sendable () -> Date

    private var database: RelayDatabase { accounts.devices.mailbox.publisher.database }

    func settings(of userID: UUID) async throws -> AuthSettingsRecord {
        try await AuthSettingsRecord.find(userID, on: database.db) ?? AuthSettingsRecord(userID: userID, now: now())
    }

    /// Applies `change` after checking the caller's password again.
    func update(_ change: Change, password: String, of caller: Caller) async throws -> AuthSettingsRecord {
        _ = try await accounts.confirmPassword(password, of: caller, otherwise: "the settings were not changed")
        let chain = change.chain
        guard Set(chain).count == chain.count else {
            throw APIFailure(.invalidChain, "Each method may appear once in the chain.")
        }
        // The password is the one factor every sign-in has (as in Keycloak's browser flow): the
        // other methods add to it and never replace it, since an arithmetic mapping or an e-mail
        // code alone is much weaker than the password the account was created with.
        guard chain.contains(.password) else {
            throw APIFailure(
                .invalidChain, "The chain must include the password; the other methods add to it, e.g. password,totp.")
        }
        if chain.contains(.biometric) {
            throw APIFailure(
                .biometricUnavailable,
                "Biometrics belong to a device (Face ID / Touch ID in the Apple app); the server cannot check them, so they are not part of a server chain."
            )
        }
        let settings = try await settings(of: caller.userID)
        if let operands = change.operands {
            guard ArithmeticChallenge.operandCount.contains(operands) else {
                throw APIFailure(.invalidOperands, "Arithmetic challenges have 2 to 8 operands.")
            }
            settings.operands = operands
        }
        if let length = change.codeLength {
            guard OneTimeCode.lengths.contains(length) else {
                throw APIFailure(.invalidCodeLength, "E-mail codes have 4 to 8 characters.")
            }
            settings.codeLength = length
        }
        if let text = change.mapping {
            let mapping: ArithmeticMapping
            do { mapping = try ArithmeticMapping(parsing: text) } catch {
                throw APIFailure(.invalidMapping, error.description)
            }
            settings.sealedMapping = try secrets.seal(
                JSONEncoder().encode(mapping), user: caller.userID, field: AuthSecrets.Field.arithmeticMapping)
        }
        if let secretText = change.totpSecret {
            let secret: [UInt8]
            do { secret = try Base32.decode(secretText) } catch {
                throw APIFailure(.invalidTOTPSecret, error.description)
            }
            guard secret.count >= 16 else {
                throw APIFailure(.invalidTOTPSecret, "A TOTP secret needs at least 128 bits.")
            }
            guard let code = change.totpCode,
                let step = TOTP(secret: secret).verify(
                    code, at: UInt64(now().timeIntervalSince1970), lastAcceptedStep: nil)
            else {
                throw APIFailure(
                    .invalidTOTPCode, "Confirm the new TOTP secret with a current code from the authenticator.")
            }
            settings.sealedTOTPSecret = try secrets.seal(
                Data(secret), user: caller.userID, field: AuthSecrets.Field.totpSecret)
            settings.totpLastStep = Int64(step)
        }
        if chain.contains(.arithmetic), settings.sealedMapping == nil {
            throw APIFailure(
                .invalidMapping, "The arithmetic method needs your operator mapping, e.g. +=*,-=/,*=+,/=-.")
        }
        if chain.contains(.totp), settings.sealedTOTPSecret == nil {
            throw APIFailure(.invalidTOTPSecret, "The TOTP method needs a secret and a current code for it.")
        }
        settings.chain = chain.map(\.rawValue).joined(separator: ",")
        settings.updatedAt = now()
        try await database.write { db in try await settings.save(on: db) }
        return settings
    }
}

extension AuthSettingsRecord {
    var wire: Components.Schemas.AuthSettings {
        .init(
            chain: SignInService.chain(chain).map(\.wire), operands: operands, codeLength: codeLength,
            arithmeticConfigured: sealedMapping != nil, totpEnrolled: sealedTOTPSecret != nil)
    }
}
