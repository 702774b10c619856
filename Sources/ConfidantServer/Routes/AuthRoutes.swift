import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Crypto
import Fluent
import Foundation
import OpenAPIRuntime
import Vapor

/// Sign-in settings and sign-in transactions (docs/PROTOCOL.md §7, docs/SECURITY.md).
extension RelayAPI {
    static func chain(_ text: String) -> [SignInMethod] { text.split(separator: ",").compactMap { SignInMethod(rawValue: String($0)) } }

    static func settingsBody(_ settings: AuthSettingsRecord) -> Components.Schemas.AuthSettings {
        .init(chain: chain(settings.chain).map(\.wire), operands: settings.operands, codeLength: settings.codeLength,
              arithmeticConfigured: settings.sealedMapping != nil, totpEnrolled: settings.sealedTOTPSecret != nil)
    }

    // MARK: Settings

    func getAuthSettings(_ input: Operations.GetAuthSettings.Input) async throws -> Operations.GetAuthSettings.Output {
        let (request, caller) = try await signedIn()
        let settings = try await AuthSettingsRecord.find(caller.userID, on: request.db) ?? AuthSettingsRecord(userID: caller.userID)
        return .ok(.init(body: .json(Self.settingsBody(settings))))
    }

    func updateAuthSettings(_ input: Operations.UpdateAuthSettings.Input) async throws -> Operations.UpdateAuthSettings.Output {
        let (request, caller) = try await signedIn()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        _ = try await confirmPassword(body.password, of: caller, request: request, otherwise: "the settings were not changed")
        let chain = body.chain.map(SignInMethod.init)
        guard Set(chain).count == chain.count else { throw APIFailure(.invalidChain, "Each method may appear once in the chain.") }
        if chain.contains(.biometric) {
            throw APIFailure(.biometricUnavailable, "Biometrics belong to a device (Face ID / Touch ID in the Apple app); the server cannot check them, so they are not part of a server chain.")
        }
        let settings = try await AuthSettingsRecord.find(caller.userID, on: request.db) ?? AuthSettingsRecord(userID: caller.userID)
        if let operands = body.operands {
            guard ArithmeticChallenge.operandCount.contains(operands) else {
                throw APIFailure(.invalidOperands, "Arithmetic challenges have 2 to 8 operands.")
            }
            settings.operands = operands
        }
        if let length = body.codeLength {
            guard OneTimeCode.lengths.contains(length) else { throw APIFailure(.invalidCodeLength, "E-mail codes have 4 to 8 characters.") }
            settings.codeLength = length
        }
        if let text = body.mapping {
            let mapping: ArithmeticMapping
            do { mapping = try ArithmeticMapping(parsing: text) } catch {
                throw APIFailure(.invalidMapping, error.description)
            }
            settings.sealedMapping = try context.authSecrets.seal(JSONEncoder().encode(mapping), user: caller.userID, field: "arithmetic-mapping")
        }
        if let secretText = body.totpSecret {
            let secret: [UInt8]
            do { secret = try Base32.decode(secretText) } catch { throw APIFailure(.invalidTOTPSecret, error.description) }
            guard secret.count >= 16 else { throw APIFailure(.invalidTOTPSecret, "A TOTP secret needs at least 128 bits.") }
            guard let code = body.totpCode,
                  let step = TOTP(secret: secret).verify(code, at: UInt64(Date().timeIntervalSince1970), lastAcceptedStep: nil) else {
                throw APIFailure(.invalidTOTPCode, "Confirm the new TOTP secret with a current code from the authenticator.")
            }
            settings.sealedTOTPSecret = try context.authSecrets.seal(Data(secret), user: caller.userID, field: "totp-secret")
            settings.totpLastStep = Int64(step)
        }
        if chain.contains(.arithmetic), settings.sealedMapping == nil {
            throw APIFailure(.invalidMapping, "The arithmetic method needs your operator mapping, e.g. +=*,-=/,*=+,/=-.")
        }
        if chain.contains(.totp), settings.sealedTOTPSecret == nil {
            throw APIFailure(.invalidTOTPSecret, "The TOTP method needs a secret and a current code for it.")
        }
        settings.chain = chain.map(\.rawValue).joined(separator: ",")
        settings.updatedAt = Date()
        try await context.write(request.db) { db in try await settings.save(on: db) }
        return .ok(.init(body: .json(Self.settingsBody(settings))))
    }

    // MARK: Transactions

    func startSignIn(_ input: Operations.StartSignIn.Input) async throws -> Operations.StartSignIn.Output {
        let request = try RequestContextMiddleware.request()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let email = try Self.email(body.email)
        let identity: PublicIdentity
        do { identity = try PublicIdentity(serialized: body.identity.data) } catch {
            throw APIFailure(.invalidIdentity, "The device identity is not a valid, self-signed public identity: \(error).")
        }
        let address = context.clientAddress(request)
        let throttle = Throttle(policy: context.configuration.signInPolicy)
        try await throttle.check(["sign-in/account/\(email)", "sign-in/address/\(address)"], on: request.db)

        let user = try await UserRecord.query(on: request.db).filter(\.$email == email).first()
        let steps = try await decideSteps(for: user, identity: identity, address: address, on: request.db)
        let token = SessionToken.generate()
        let transaction = SignInTransactionRecord(
            tokenHash: token.hash, userID: user?.id, email: email, identity: identity.serialized, address: address,
            steps: steps.map(\.rawValue).joined(separator: ","), expiresAt: Date().addingTimeInterval(context.configuration.signInTransactionLifetime))
        let step = try await prepareStep(transaction, request: request)
        try await context.write(request.db) { db in try await transaction.create(on: db) }
        return .created(.init(body: .json(.init(transactionId: token.text, expiresAt: transaction.expiresAt, step: step))))
    }

    /// The steps the adaptive policy asks of this sign-in: the account's chain, plus the e-mail code
    /// from a new device or address (once the account has a device and an address to compare with).
    func decideSteps(for user: UserRecord?, identity: PublicIdentity, address: String, on db: any Database) async throws -> [SignInMethod] {
        // An e-mail without an account is answered as an account whose chain starts with the password.
        var chain: [SignInMethod] = [.password]
        var knownDevice = true, knownAddress = true
        if let userID = user?.id {
            if let settings = try await AuthSettingsRecord.find(userID, on: db) { chain = Self.chain(settings.chain) }
            let devices = try await DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$retiredAt == nil).all()
            knownDevice = devices.isEmpty || devices.contains { $0.deviceID == identity.deviceID && $0.identity == identity.serialized }
            let addresses = try await SignInAddressRecord.query(on: db).filter(\.$userID == userID).all()
            knownAddress = addresses.isEmpty || addresses.contains { $0.address == address }
        }
        switch context.configuration.signInPolicy.decide(SignInContext(configuredChain: chain, knownDevice: knownDevice, knownAddress: knownAddress)) {
        case .proceed(let steps, _): return steps
        case .locked(let retryAfter):
            throw APIFailure(.lockedOut, "Too many failed attempts; try again later.", retryAfter: Int(retryAfter.rounded(.up)))
        }
    }

    private func transaction(_ id: String, on db: any Database) async throws -> SignInTransactionRecord {
        guard (20...100).contains(id.count),
              let transaction = try await SignInTransactionRecord.query(on: db).filter(\.$tokenHash == SessionToken.hash(id)).first() else {
            throw APIFailure(.transactionNotFound, "No such sign-in in progress; start again with POST /v1/auth/sign-in.")
        }
        guard transaction.expiresAt > Date() else {
            throw APIFailure(.transactionExpired, "This sign-in expired; start again.")
        }
        return transaction
    }

    func currentSignInStep(_ input: Operations.CurrentSignInStep.Input) async throws -> Operations.CurrentSignInStep.Output {
        let request = try RequestContextMiddleware.request()
        let transaction = try await transaction(input.path.transactionId, on: request.db)
        let steps = Self.chain(transaction.steps)
        guard transaction.stepIndex < steps.count else { throw APIFailure(.transactionExpired, "This sign-in is finished; start again.") }
        if input.query.resend == true, steps[transaction.stepIndex] == .emailCode {
            let cooldown = context.configuration.emailCodeResendSeconds
            if let sent = transaction.codeSentAt, Date().timeIntervalSince(sent) < cooldown {
                let wait = Int((cooldown - Date().timeIntervalSince(sent)).rounded(.up))
                throw APIFailure(.rateLimited, "A code was sent moments ago; ask again in \(wait) seconds.", retryAfter: wait)
            }
            transaction.challenge = nil
        }
        let step = try await prepareStep(transaction, request: request)
        try await context.write(request.db) { db in try await transaction.update(on: db) }
        return .ok(.init(body: .json(.init(transactionId: input.path.transactionId, expiresAt: transaction.expiresAt, step: step))))
    }

    func answerSignInStep(_ input: Operations.AnswerSignInStep.Input) async throws -> Operations.AnswerSignInStep.Output {
        let request = try RequestContextMiddleware.request()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let transaction = try await transaction(input.path.transactionId, on: request.db)
        let steps = Self.chain(transaction.steps)
        guard transaction.stepIndex < steps.count else { throw APIFailure(.transactionExpired, "This sign-in is finished; start again.") }
        let expected = steps[transaction.stepIndex]
        guard SignInMethod(body.method) == expected else {
            throw APIFailure(.wrongStep, "Steps are answered in order; the current step is \(expected.wire.rawValue).")
        }
        let throttle = Throttle(policy: context.configuration.signInPolicy)
        let keys = ["sign-in/account/\(transaction.email)", "sign-in/address/\(transaction.address)"]
        try await throttle.check(keys, on: request.db)

        let user = try await transaction.userID.asyncMap { try await UserRecord.find($0, on: request.db) } ?? nil
        let passed = try await check(body.answer, for: expected, transaction: transaction, user: user, request: request)
        guard passed, let user else {
            transaction.attempts += 1
            let closed = transaction.attempts >= context.configuration.signInAttemptsPerTransaction
            // An arithmetic challenge is single use: a wrong answer gets a new one. An e-mail code
            // stays until it expires, is resent, or the attempts run out.
            if expected == .arithmetic { transaction.challenge = nil }
            try await context.write(request.db) { db in
                try await throttle.recordFailure(keys, on: db)
                if closed { try await transaction.delete(on: db) } else { try await transaction.update(on: db) }
            }
            if closed { throw APIFailure(.transactionExpired, "Too many wrong answers; start the sign-in again.") }
            throw APIFailure(.invalidCredentials, "That answer is wrong. GET this sign-in for the current step (a new challenge where there was one).")
        }
        transaction.stepIndex += 1
        transaction.challenge = nil
        transaction.codeSentAt = nil
        if transaction.stepIndex < steps.count {
            let step = try await prepareStep(transaction, request: request)
            try await context.write(request.db) { db in try await transaction.update(on: db) }
            return .ok(.init(body: .json(.init(transactionId: input.path.transactionId, expiresAt: transaction.expiresAt, step: step))))
        }
        let identity = try PublicIdentity(serialized: transaction.identity)
        try await context.write(request.db) { db in try await transaction.delete(on: db) }
        let session = try await openSession(for: user, identity: identity, request: request, resetting: keys, throttle: throttle)
        return .ok(.init(body: .json(.init(session: session))))
    }

    /// Creates the current step's challenge (an arithmetic expression, or an e-mail code sent now)
    /// when it has none, and describes the step.
    private func prepareStep(_ transaction: SignInTransactionRecord, request: Request) async throws -> Components.Schemas.SignInStep {
        let steps = Self.chain(transaction.steps)
        let method = steps[transaction.stepIndex]
        let settings = try await transaction.userID.asyncMap { try await AuthSettingsRecord.find($0, on: request.db) } ?? nil
        switch method {
        case .arithmetic where transaction.challenge == nil:
            let operands = settings?.operands ?? 4
            // An e-mail without an account gets a challenge like anyone else's.
            let mapping = try settings.flatMap { try storedMapping(of: $0) } ?? ArithmeticMapping(ArithmeticMapping.natural)
            var generator = SystemRandomNumberGenerator()
            let challenge = try ArithmeticChallenge.generate(operands: operands, mapping: mapping, using: &generator)
            transaction.challenge = Data(challenge.description.utf8)
        case .emailCode where transaction.challenge == nil:
            let code = try OneTimeCode.generate(length: settings?.codeLength ?? 6)
            transaction.challenge = Data(SHA256.hash(data: Data(code.uppercased().utf8)))
            transaction.codeSentAt = Date()
            if transaction.userID != nil { try await context.mailer.send(code: code, to: transaction.email, logger: request.logger) }
        default:
            break
        }
        return try await describeStep(transaction)
    }

    private func describeStep(_ transaction: SignInTransactionRecord) async throws -> Components.Schemas.SignInStep {
        let steps = Self.chain(transaction.steps)
        let method = steps[transaction.stepIndex]
        let number = transaction.stepIndex + 1
        switch method {
        case .password:
            return .init(method: .password, number: number, prompt: "Password")
        case .arithmetic:
            let challenge = transaction.challenge.map { String(decoding: $0, as: UTF8.self) }
            return .init(method: .arithmetic, number: number, challenge: challenge,
                         prompt: challenge.map { "Evaluate \($0) under your operator mapping, left to right" }
                            ?? "GET this sign-in again for a new challenge")
        case .emailCode:
            return .init(method: .emailCode, number: number, codeLength: nil,
                         prompt: "The code we sent to \(Self.masked(transaction.email))")
        case .totp:
            return .init(method: .totp, number: number, codeLength: 6, prompt: "The 6-digit code from your authenticator app")
        case .biometric:
            return .init(method: .biometric, number: number, prompt: "Biometrics are checked on the device")
        }
    }

    private func storedMapping(of settings: AuthSettingsRecord) throws -> ArithmeticMapping? {
        guard let sealed = settings.sealedMapping, let userID = settings.id else { return nil }
        return try JSONDecoder().decode(ArithmeticMapping.self, from: context.authSecrets.open(sealed, user: userID, field: "arithmetic-mapping"))
    }

    /// Checks one answer in constant time where it compares secrets. An e-mail without an account
    /// costs the same and always fails.
    private func check(_ answer: String, for method: SignInMethod, transaction: SignInTransactionRecord, user: UserRecord?,
                       request: Request) async throws -> Bool {
        let settings = try await transaction.userID.asyncMap { try await AuthSettingsRecord.find($0, on: request.db) } ?? nil
        switch method {
        case .password:
            return try await context.passwords.verify(answer, against: user?.passwordHash ?? PasswordPolicy.decoyHash, on: request.application.threadPool)
                && user != nil
        case .arithmetic:
            guard let text = transaction.challenge.map({ String(decoding: $0, as: UTF8.self) }),
                  let challenge = try? ArithmeticChallenge(parsing: text),
                  let mapping = try settings.flatMap({ try storedMapping(of: $0) }),
                  let expected = challenge.answer(under: mapping) else { return false }
            return ConstantTime.equal(Array(String(expected).utf8), Array(answer.trimmingCharacters(in: .whitespaces).utf8))
        case .emailCode:
            guard let stored = transaction.challenge, let sent = transaction.codeSentAt,
                  Date().timeIntervalSince(sent) < context.configuration.signInTransactionLifetime else { return false }
            let entered = Data(SHA256.hash(data: Data(answer.trimmingCharacters(in: .whitespaces).uppercased().utf8)))
            return ConstantTime.equal(Array(entered), Array(stored))
        case .totp:
            guard let settings, let sealed = settings.sealedTOTPSecret, let userID = settings.id else { return false }
            let secret = try context.authSecrets.open(sealed, user: userID, field: "totp-secret")
            guard let step = TOTP(secret: Array(secret)).verify(answer.trimmingCharacters(in: .whitespaces), at: UInt64(Date().timeIntervalSince1970),
                                                                  lastAcceptedStep: settings.totpLastStep.map(UInt64.init)) else { return false }
            settings.totpLastStep = Int64(step)
            try await context.write(request.db) { db in try await settings.update(on: db) }
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
