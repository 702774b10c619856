import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Foundation

/// One step of a multi-step sign-in, as the server asks it.
public struct SignInStep: Sendable, Equatable {
    /// A sign-in method.
    public typealias Method = SignInMethod

    /// What the step asks for.
    public let method: Method
    /// 1-based position in the chain (the total is not disclosed before the password passes).
    public let number: Int
    /// The arithmetic expression to evaluate under the user's mapping.
    public let challenge: String?
    /// What to ask the user, in the server's words.
    public let prompt: String
    /// Why the step is asked again: the last answer was wrong (an arithmetic step comes with a new
    /// challenge), or came too soon after a wrong one (the server's words, with the wait).
    public internal(set) var problem: String?
    /// What happened that is not a problem: "a new code is on its way".
    public internal(set) var notice: String?
    /// An e-mail code step: when a new code may be asked for (throw ``SignInCodeResendRequest``
    /// from the answerer); nil for other steps.
    public let resendAvailableAt: Date?

    init(_ step: Components.Schemas.SignInStep, now: Date = Date()) {
        method = SignInMethod(step.method)
        number = step.number
        challenge = step.challenge
        prompt = step.prompt
        resendAvailableAt =
            method == .emailCode ? now.addingTimeInterval(TimeInterval(max(0, step.resendAfter ?? 0))) : nil
    }
}

/// Answers the steps a profile cannot answer by itself (all but the password): a terminal prompt,
/// a screen, or a test reading the code from the server's development outbox. To have an e-mail
/// code sent again instead of answering, throw ``SignInCodeResendRequest``.
public typealias SignInAnswerer = @Sendable (SignInStep) async throws -> String

/// Thrown by a ``SignInAnswerer`` at an e-mail code step: mail a new code (the server allows one
/// a minute) and ask the step again, with a notice or the server's reason to wait.
public struct SignInCodeResendRequest: Error, Sendable {
    /// The request.
    public init() {}
}

/// How an account signs in, as the server reports it (never the secrets).
public struct SignInSettings: Sendable, Equatable {
    /// The methods every sign-in walks, in order.
    public let chain: [SignInStep.Method]
    /// How many operands an arithmetic challenge has (2–8).
    public let operands: Int
    /// How many characters an e-mail code has (4–8).
    public let codeLength: Int
    /// Whether an operator mapping is stored.
    public let arithmeticConfigured: Bool
    /// Whether a TOTP secret is enrolled.
    public let totpEnrolled: Bool

    init(_ settings: Components.Schemas.AuthSettings) {
        chain = settings.chain.map(SignInMethod.init)
        operands = settings.operands
        codeLength = settings.codeLength
        arithmeticConfigured = settings.arithmeticConfigured
        totpEnrolled = settings.totpEnrolled
    }
}

/// A change to how an account signs in.
public struct SignInSettingsChange: Sendable {
    /// The methods, in order.
    public var chain: [SignInStep.Method]
    /// Operands of an arithmetic challenge (2–8); unchanged when nil.
    public var operands: Int?
    /// `+=*,-=/,*=+,/=-`: which operation each sign stands for.
    public var mapping: String?
    /// Characters of an e-mail code (4–8); unchanged when nil.
    public var codeLength: Int?
    /// A new TOTP secret (base32) and a current code for it.
    public var totpSecret: String?
    /// A current code for `totpSecret`, which the server checks before it stores the secret.
    public var totpCode: String?

    /// A change; leave out what stays as it is.
    public init(
        chain: [SignInStep.Method], operands: Int? = nil, mapping: String? = nil, codeLength: Int? = nil,
        totpSecret: String? = nil, totpCode: String? = nil
    ) {
        self.chain = chain
        self.operands = operands
        self.mapping = mapping
        self.codeLength = codeLength
        self.totpSecret = totpSecret
        self.totpCode = totpCode
    }
}

extension RelayClient {
    /// Proof that this device holds `identity`'s key, for signing in as `email`: a fresh challenge
    /// from the server, signed (docs/PROTOCOL.md §7.1).
    func deviceProof(email: String, identity: PrivateIdentity) async throws -> Components.Schemas.DeviceProof {
        let challenge: Components.Schemas.DeviceChallenge
        switch try await call({ try await $0.createDeviceChallenge() }) {
        case .created(let created): challenge = try created.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        return try .init(signing: challenge, email: email, identity: identity)
    }

    /// Walks a sign-in transaction: the password from the caller, every other step from `answer`.
    /// A wrong answer fetches the current step again (a new challenge) and asks again, until the
    /// server closes the transaction.
    func signInWithSteps(email: String, password: String, identity: PrivateIdentity, answer: SignInAnswerer)
        async throws -> Components.Schemas.Session
    {
        let start = Components.Schemas.SignInStart(
            email: email, identity: .init(identity.publicIdentity.serialized),
            proof: try await deviceProof(email: email, identity: identity))
        var progress: Components.Schemas.SignInProgress
        var problemWithLastAnswer: String?
        var noticeForStep: String?
        switch try await call({ try await $0.startSignIn(body: .json(start)) }) {
        case .created(let created): progress = try created.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        guard let id = progress.transactionId else {
            throw ConfidantKitError.badResponse("the sign-in has no transaction id")
        }
        while true {
            if let session = progress.session { return session }
            guard let wire = progress.step else {
                throw ConfidantKitError.badResponse("the sign-in has neither a step nor a session")
            }
            var step = SignInStep(wire)
            step.problem = problemWithLastAnswer
            step.notice = noticeForStep
            problemWithLastAnswer = nil
            noticeForStep = nil
            let reply: String
            do {
                reply = step.method == .password ? password : try await answer(step)
            } catch is SignInCodeResendRequest where step.method == .emailCode {
                let path = Operations.CurrentSignInStep.Input.Path(transactionId: id)
                switch try await call({ try await $0.currentSignInStep(path: path, query: .init(resend: true)) }) {
                case .ok(let ok):
                    progress = try ok.body.json
                    noticeForStep = "A new code is on its way; the one before no longer works."
                case .default(let status, let response):
                    guard case .server(_, .rateLimited, let message) = problem(status, response) else {
                        throw problem(status, response)
                    }
                    problemWithLastAnswer = message
                    switch try await call({ try await $0.currentSignInStep(path: path) }) {
                    case .ok(let ok): progress = try ok.body.json
                    case .default(let status, let response): throw problem(status, response)
                    }
                }
                continue
            }
            let body = Components.Schemas.SignInAnswer(method: wire.method, answer: reply)
            switch try await call({ try await $0.answerSignInStep(path: .init(transactionId: id), body: .json(body)) })
            {
            case .ok(let ok):
                progress = try ok.body.json
            case .default(let status, let response):
                let error = problem(status, response)
                // A wrong answer, or one too soon after it, asks the step again; anything else ends it.
                guard step.method != .password else { throw error }
                switch error {
                case .server(_, .invalidCredentials, _):
                    problemWithLastAnswer =
                        step.method == .arithmetic
                        ? "Wrong answer. Here is a new challenge." : "Wrong answer. Try again."
                case .server(_, .rateLimited, let message): problemWithLastAnswer = message
                default: throw error
                }
                switch try await call({ try await $0.currentSignInStep(path: .init(transactionId: id)) }) {
                case .ok(let ok): progress = try ok.body.json
                case .default(let status, let response): throw problem(status, response)
                }
            }
        }
    }
}
