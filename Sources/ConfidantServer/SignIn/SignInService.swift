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

    var database: RelayDatabase { sessions.database }
    var throttle: Throttle { Throttle(policy: configuration.signInPolicy) }
    var now: Date { configuration.now() }

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
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
