import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Crypto
import Fluent
import Foundation
import Logging
import NIOPosix

/// Signing in: with the password alone when the adaptive policy asks nothing more, otherwise as
/// a transaction that walks the account's chain step by step (docs/PROTOCOL.md §7,
/// docs/SECURITY.md). Failures count against the account and the network address.
struct SignInService: Sendable {
    let accounts: AccountService
    let sessions: SessionService
    let secrets: AuthSecrets
    let challenges: DeviceChallenges
    let mailer: any CodeMailer
    let configuration: ServerConfiguration
    let logger: Logger

    private var database: RelayDatabase { sessions.database }
    private var throttle: Throttle { Throttle(policy: configuration.signInPolicy) }
    private var now: Date { configuration.now() }

    // MARK: Password only

    /// `POST /v1/sessions`: the password, for a sign-in the policy lets through with it alone.
    func signIn(
        email raw: String, password: String, identity: PublicIdentity, proof: Components.Schemas.DeviceProof,
        address: String
    ) async throws -> Components.Schemas.Session {
        let email = try AccountService.email(raw)
        // Before anything is counted or compared: the device must hold the key it presents.
        try await challenges.redeem(proof, email: raw, identity: identity)
        let accountKey = "sign-in/account/\(email)"
        let keys = [accountKey, "sign-in/address/\(address)"]
        let throttle = throttle
        let reservation = try await throttle.reserve(keys, on: database, now: now)

        let user = try await accounts.user(email: email)
        let verified = try await accounts.passwords.verify(
            password, against: user?.passwordHash ?? PasswordPolicy.decoyHash,
            on: accounts.passwordHashing)
        guard verified, let user, user.id != nil else {
            throw APIFailure(.invalidCredentials, "The e-mail address or the password is wrong.")
        }
        // Not a failure; but only a completed sign-in resets the account's count.
        try await reservation.release()
        if try await steps(for: user, identity: identity, address: address) != [.password] {
            // The password is right, but this sign-in needs more: the account's chain, or the
            // e-mail code for a new device or address.
            throw APIFailure(
                .stepUpRequired,
                "This sign-in needs more than the password (a chain, or a new device or address); use POST /v1/auth/sign-in (`confidant account login` does)."
            )
        }
        return try await sessions.open(
            for: user, identity: identity, address: address, resetting: [accountKey], throttle: throttle)
    }

    // MARK: Transactions

    /// Starts a sign-in transaction: its id and its first step.
    func start(
        email raw: String, identity: PublicIdentity, proof: Components.Schemas.DeviceProof, address: String
    ) async throws -> Components.Schemas.SignInProgress {
        let email = try AccountService.email(raw)
        try await challenges.redeem(proof, email: raw, identity: identity)
        let now = now
        try await throttle.check(["sign-in/account/\(email)", "sign-in/address/\(address)"], on: database.db, now: now)
        // A start stores a transaction and may send an e-mail code: bounded per account (no
        // mail-bombing an address) and per network address, whatever the answers.
        try await configuration.signInStarts.perAccount.take(["sign-in-start/account/\(email)"], on: database, now: now)
        try await configuration.signInStarts.perAddress.take(
            ["sign-in-start/address/\(address)"], on: database, now: now)
        try await database.write { db in
            try await SignInTransactionRecord.query(on: db).filter(\.$expiresAt < now).delete()
            try await RateLimit.purge(before: now.addingTimeInterval(-86_400), on: db)
        }
        let user = try await accounts.user(email: email)
        let steps = try await steps(for: user, identity: identity, address: address)
        let token = SessionToken.generate()
        let transaction = SignInTransactionRecord(
            tokenHash: token.hash, userID: user?.id, email: email, identity: identity.serialized, address: address,
            steps: steps.map(\.rawValue).joined(separator: ","),
            expiresAt: now.addingTimeInterval(configuration.signInTransactionLifetime))
        let step = try await prepareStep(transaction)
        try await database.write { db in try await transaction.create(on: db) }
        return .init(transactionId: token.text, expiresAt: transaction.expiresAt, step: step)
    }

    /// The current step (a new arithmetic challenge after a wrong answer; a new e-mail code on `resend`).
    func currentStep(of id: String, resend: Bool) async throws -> Components.Schemas.SignInProgress {
        let transaction = try await transaction(id)
        let steps = Self.chain(transaction.steps)
        guard transaction.stepIndex < steps.count else {
            throw APIFailure(.transactionExpired, "This sign-in is finished; start again.")
        }
        if resend, steps[transaction.stepIndex] == .emailCode {
            let cooldown = configuration.emailCodeResendSeconds
            let now = now
            if let sent = transaction.codeSentAt, now.timeIntervalSince(sent) < cooldown {
                let wait = Int((cooldown - now.timeIntervalSince(sent)).rounded(.up))
                throw APIFailure(
                    .rateLimited, "A code was sent moments ago; ask again in \(wait) seconds.", retryAfter: wait)
            }
            transaction.challenge = nil
        }
        let step = try await prepareStep(transaction)
        try await database.write { db in try await transaction.update(on: db) }
        return .init(transactionId: id, expiresAt: transaction.expiresAt, step: step)
    }

    /// Answers the current step: the next step, or the session after the last.
    func answer(_ answer: String, method: SignInMethod, in id: String) async throws -> Components.Schemas.SignInProgress
    {
        let transaction = try await transaction(id)
        let steps = Self.chain(transaction.steps)
        guard transaction.stepIndex < steps.count else {
            throw APIFailure(.transactionExpired, "This sign-in is finished; start again.")
        }
        let expected = steps[transaction.stepIndex]
        guard method == expected else {
            throw APIFailure(.wrongStep, "Steps are answered in order; the current step is \(expected.wire.rawValue).")
        }
        let keys = ["sign-in/account/\(transaction.email)", "sign-in/address/\(transaction.address)"]
        let throttle = throttle
        let reservation = try await throttle.reserve(keys, on: database, now: now)

        let user = try await transaction.userID.asyncMap { try await accounts.user($0) } ?? nil
        let passed = try await check(answer, for: expected, transaction: transaction, user: user)
        guard passed, let user else {
            // An arithmetic challenge is single use: a wrong answer gets a new one. An e-mail code
            // stays until it expires, is resent, or the attempts run out.
            try await SignInTransactionTable.recordWrongAnswer(
                transaction, freshChallenge: expected == .arithmetic,
                closingAt: configuration.signInAttemptsPerTransaction,
                on: database)
            throw APIFailure(
                .invalidCredentials,
                "That answer is wrong. GET this sign-in for the current step (a new challenge where there was one).")
        }
        try await reservation.release()
        // One answer moves the sign-in on: of two right answers sent at once, the second is late.
        guard try await SignInTransactionTable.advance(transaction, from: transaction.stepIndex, on: database) else {
            throw APIFailure(.wrongStep, "This step was answered already; GET this sign-in for the current step.")
        }
        transaction.stepIndex += 1
        transaction.challenge = nil
        transaction.codeSentAt = nil
        if transaction.stepIndex < steps.count {
            let step = try await prepareStep(transaction)
            try await database.write { db in try await transaction.update(on: db) }
            return .init(transactionId: id, expiresAt: transaction.expiresAt, step: step)
        }
        let identity = try PublicIdentity(serialized: transaction.identity)
        try await database.write { db in try await transaction.delete(on: db) }
        // A completed sign-in resets its account's count (not the address's: one account's
        // success must not clear what guessing at other accounts from there has counted).
        let session = try await sessions.open(
            for: user, identity: identity, address: transaction.address, resetting: [keys[0]], throttle: throttle,
            emailProven: steps.contains(.emailCode))
        return .init(session: session)
    }

    private func transaction(_ id: String) async throws -> SignInTransactionRecord {
        guard (20...100).contains(id.count),
            let transaction = try await SignInTransactionRecord.query(on: database.db).filter(
                \.$tokenHash == SessionToken.hash(id)
            ).first()
        else {
            throw APIFailure(
                .transactionNotFound, "No such sign-in in progress; start again with POST /v1/auth/sign-in.")
        }
        guard transaction.expiresAt > now else {
            throw APIFailure(.transactionExpired, "This sign-in expired; start again.")
        }
        return transaction
    }

    // MARK: Steps

    static func chain(_ text: String) -> [SignInMethod] {
        text.split(separator: ",").compactMap { SignInMethod(rawValue: String($0)) }
    }

    /// The steps the adaptive policy asks of this sign-in: the account's chain, plus the e-mail code
    /// from a new device or address (once the account has a device and an address to compare with)
    /// or for an address not yet proved (a new account's first sign-in).
    private func steps(for user: UserRecord?, identity: PublicIdentity, address: String) async throws -> [SignInMethod]
    {
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
    private func prepareStep(_ transaction: SignInTransactionRecord) async throws -> Components.Schemas.SignInStep {
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
            if transaction.userID != nil { try await mailer.send(code: code, to: transaction.email, logger: logger) }
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

    private static func describe(_ method: SignInMethod, of transaction: SignInTransactionRecord)
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
    private func check(
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

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
