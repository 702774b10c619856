import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Crypto
import Fluent
import Foundation
import Logging
import NIOPosix

/// The steps of a sign-in chain: which the account asks for, each prepared and checked.
extension SignInService {
    static func chain(_ text: String) -> [SignInMethod] {
        text.split(separator: ",").compactMap { SignInMethod(rawValue: String($0)) }
    }

    /// The steps the adaptive policy asks of this sign-in: the account's chain, plus the e-mail code
    /// from a new device or address (once the account has a device and an address to compare with)
    /// or for an address not yet proved (a new account's first sign-in).
    func steps(for user: UserRecord?, identity: PublicIdentity, address: String) async throws -> [SignInMethod] {
        // An e-mail without an account is answered as an account whose chain starts with the password.
        var chain: [SignInMethod] = [.password]
        var knownDevice = true
        var knownAddress = true
        if let userID = user?.id {
            if let settings = try await AuthSettingsRecord.find(userID, on: database.db) {
                chain = Self.chain(settings.chain)
                // Settings stored before the chain had to include the password still get it first.
                if !chain.contains(.password) { chain.insert(.password, at: 0) }
            }
            // An address never proved: the code sent to it, right after the password.
            if user?.emailVerifiedAt == nil, !chain.contains(.emailCode) {
                chain.insert(.emailCode, at: (chain.firstIndex(of: .password) ?? -1) + 1)
            }
            let devices = try await accounts.devices.current(of: userID)
            knownDevice =
                devices.isEmpty
                || devices.contains { $0.deviceID == identity.deviceID && $0.identity == identity.serialized }
            let addresses = try await SignInAddressRecord.query(on: database.db).filter(\.$userID == userID).all()
            knownAddress = addresses.isEmpty || addresses.contains { $0.address == address }
        }
        switch configuration.signInPolicy.decide(
            SignInContext(configuredChain: chain, knownDevice: knownDevice, knownAddress: knownAddress))
        {
        case .proceed(let steps, _): return steps
        case .locked(let retryAfter):
            throw APIFailure(
                .lockedOut, "Too many failed attempts; try again later.", retryAfter: Int(retryAfter.rounded(.up)))
        }
    }

    /// Creates the current step's challenge (an arithmetic expression, or an e-mail code sent now)
    /// when it has none, and describes the step.
    func prepareStep(_ transaction: SignInTransactionRecord) async throws -> Components.Schemas.SignInStep {
        let method = Self.chain(transaction.steps)[transaction.stepIndex]
        let settings =
            try await transaction.userID.asyncMap { try await AuthSettingsRecord.find($0, on: database.db) } ?? nil
        switch method {
        case .arithmetic where transaction.challenge == nil:
            let operands = settings?.operands ?? 4
            // An e-mail without an account gets a challenge like anyone else's.
            let mapping =
                try settings.flatMap { try storedMapping(of: $0) } ?? ArithmeticMapping(ArithmeticMapping.natural)
            var generator = SystemRandomNumberGenerator()
            let challenge = try ArithmeticChallenge.generate(operands: operands, mapping: mapping, using: &generator)
            transaction.challenge = Data(challenge.description.utf8)
        case .emailCode where transaction.challenge == nil:
            let code = try OneTimeCode.generate(length: settings?.codeLength ?? 6)
            transaction.challenge = secrets.codeDigest(code, transaction: transaction.tokenHash)
            transaction.codeSentAt = now
            if transaction.userID != nil {
                try await mailer.send(
                    code: code, to: transaction.email, logger: RequestContextMiddleware.logger(or: logger))
            }
        default:
            break
        }
        var step = Self.describe(method, of: transaction)
        if method == .emailCode, let sent = transaction.codeSentAt {
            let wait = configuration.emailCodeResendSeconds - now.timeIntervalSince(sent)
            step.resendAfter = max(0, Int(wait.rounded(.up)))
        }
        return step
    }

    static func describe(_ method: SignInMethod, of transaction: SignInTransactionRecord)
        -> Components.Schemas.SignInStep
    {
        let number = transaction.stepIndex + 1
        switch method {
        case .password:
            return .init(method: .password, number: number, prompt: "Password")
        case .arithmetic:
            let challenge = transaction.challenge.map { String(decoding: $0, as: UTF8.self) }
            return .init(
                method: .arithmetic, number: number, challenge: challenge,
                prompt: challenge.map { "Evaluate \($0) under your operator mapping, left to right" }
                    ?? "GET this sign-in again for a new challenge")
        case .emailCode:
            return .init(
                method: .emailCode, number: number, codeLength: nil,
                prompt: "The code we sent to \(masked(transaction.email))")
        case .totp:
            return .init(
                method: .totp, number: number, codeLength: 6, prompt: "The 6-digit code from your authenticator app")
        case .biometric:
            return .init(method: .biometric, number: number, prompt: "Biometrics are checked on the device")
        }
    }

    func storedMapping(of settings: AuthSettingsRecord) throws -> ArithmeticMapping? {
        guard let sealed = settings.sealedMapping, let userID = settings.id else { return nil }
        return try JSONDecoder().decode(
            ArithmeticMapping.self, from: secrets.open(sealed, user: userID, field: AuthSecrets.Field.arithmeticMapping)
        )
    }

    /// Checks one answer in constant time where it compares secrets. An e-mail without an account
    /// costs the same and always fails.
    func check(
        _ answer: String, for method: SignInMethod, transaction: SignInTransactionRecord, user: UserRecord?
    ) async throws -> Bool {
        let settings =
            try await transaction.userID.asyncMap { try await AuthSettingsRecord.find($0, on: database.db) } ?? nil
        let trimmed = answer.trimmingCharacters(in: .whitespaces)
        switch method {
        case .password:
            return try await accounts.passwords.verify(
                answer, against: user?.passwordHash ?? PasswordPolicy.decoyHash, on: accounts.passwordHashing)
                && user != nil
        case .arithmetic:
            guard let text = transaction.challenge.map({ String(decoding: $0, as: UTF8.self) }),
                let challenge = try? ArithmeticChallenge(parsing: text),
                let mapping = try settings.flatMap({ try storedMapping(of: $0) }),
                let expected = challenge.answer(under: mapping)
            else { return false }
            return ConstantTime.equal(Array(String(expected).utf8), Array(trimmed.utf8))
        case .emailCode:
            guard let stored = transaction.challenge, let sent = transaction.codeSentAt,
                now.timeIntervalSince(sent) < configuration.signInTransactionLifetime
            else { return false }
            let entered = secrets.codeDigest(trimmed, transaction: transaction.tokenHash)
            return ConstantTime.equal(Array(entered), Array(stored))
        case .totp:
            guard let settings, let sealed = settings.sealedTOTPSecret, let userID = settings.id else { return false }
            let secret = try secrets.open(sealed, user: userID, field: AuthSecrets.Field.totpSecret)
            guard
                let step = TOTP(secret: Array(secret)).verify(
                    trimmed, at: UInt64(now.timeIntervalSince1970),
                    lastAcceptedStep: settings.totpLastStep.map(UInt64.init))
            else { return false }
            settings.totpLastStep = Int64(step)
            try await database.write { db in try await settings.update(on: db) }
            return true
        case .biometric:
            return false
        }
    }

    static func masked(_ email: String) -> String {
        guard let at = email.firstIndex(of: "@") else { return email }
        return "\(email.prefix(1))…\(email[at...])"
    }
}
