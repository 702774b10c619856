import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

extension Operations.UpdateAuthSettings.Output: ProblemOutput {}
extension Operations.StartSignIn.Output: ProblemOutput {}
extension Operations.AnswerSignInStep.Output: ProblemOutput {}
extension Operations.CurrentSignInStep.Output: ProblemOutput {}

/// Multi-step sign-in through the real server: settings, transactions, the adaptive step-up.
@Suite("Sign-in transactions")
struct SignInTransactionTests {
    static let mappingText = "+=*,-=/,*=+,/=-"

    /// A sign-in in progress, driven through the generated client.
    struct Transaction {
        let client: Client
        let id: String
        var step: Components.Schemas.SignInStep?

        static func start(_ relay: some RelayEndpoint, email: String, identity: PrivateIdentity) async throws
            -> Transaction
        {
            let progress = try await relay.client().startSignIn(
                body: .json(try await .proving(email: email, identity: identity, on: relay.client()))
            )
            .created.body.json
            return Transaction(client: relay.client(), id: try #require(progress.transactionId), step: progress.step)
        }

        func answer(_ method: Components.Schemas.SignInMethod, _ answer: String) async throws
            -> Operations.AnswerSignInStep.Output
        {
            try await client.answerSignInStep(
                path: .init(transactionId: id), body: .json(.init(method: method, answer: answer)))
        }

        /// Answers and expects the next step (or the session).
        mutating func pass(_ method: Components.Schemas.SignInMethod, _ answer: String) async throws -> Components
            .Schemas.Session?
        {
            let progress = try await self.answer(method, answer).ok.body.json
            step = progress.step
            return progress.session
        }

        func current(resend: Bool? = nil) async throws -> Components.Schemas.SignInStep? {
            try await client.currentSignInStep(path: .init(transactionId: id), query: .init(resend: resend)).ok.body
                .json.step
        }
    }

    static func arithmeticAnswer(_ step: Components.Schemas.SignInStep?) throws -> String {
        let challenge = try ArithmeticChallenge(parsing: try #require(step?.challenge))
        return String(try #require(challenge.answer(under: ArithmeticMapping(parsing: mappingText))))
    }

    static func lastCode(_ relay: TestRelay) throws -> String {
        try SignInOutbox.latestCode(dataDirectory: relay.directory)
    }

    @Test(
        "password, arithmetic and TOTP in order; no step skipped, reordered or replayed; the plain endpoint refuses",
        arguments: TestDatabaseKind.allCases)
    func chain(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let secret = TOTP.generateSecret()
            let totp = TOTP(secret: secret)
            let now = UInt64(Date().timeIntervalSince1970)
            let settings = try await alice.client.updateAuthSettings(
                body: .json(
                    .init(
                        password: alice.password, chain: [.password, .arithmetic, .totp], operands: 5,
                        mapping: Self.mappingText,
                        totpSecret: Base32.encode(secret), totpCode: totp.code(at: now)))
            ).ok.body.json
            #expect(settings.chain == [.password, .arithmetic, .totp])
            #expect(settings.arithmeticConfigured && settings.totpEnrolled && settings.operands == 5)

            let plain = try await relay.client().signIn(
                body: .json(
                    try await .proving(
                        email: alice.email, password: alice.password, identity: alice.identity, on: relay.client())))
            #expect(try plain.problem == "step_up_required 403")

            var transaction = try await Transaction.start(relay, email: alice.email, identity: alice.identity)
            #expect(transaction.step?.method == .password)
            #expect(transaction.step?.of == nil)
            #expect(try await transaction.answer(.arithmetic, "1").problem == "wrong_step 409")
            #expect(try await transaction.pass(.password, alice.password) == nil)
            #expect(transaction.step?.method == .arithmetic)
            #expect(try await transaction.answer(.totp, "000000").problem == "wrong_step 409")
            let expression = try #require(transaction.step?.challenge)
            #expect(try ArithmeticChallenge(parsing: expression).operands.count == 5)
            #expect(try await transaction.pass(.arithmetic, Self.arithmeticAnswer(transaction.step)) == nil)
            #expect(transaction.step?.method == .totp)
            // The enrolment used its time step, and a code is never accepted twice: the next step,
            // or the current one if the steps above took longer than that (a busy machine did).
            let code = totp.code(at: max(UInt64(Date().timeIntervalSince1970), now + 30))
            let session = try #require(try await transaction.pass(.totp, code))
            #expect(session.keyChanged == false)
            #expect(
                try await relay.client(token: session.token).currentAccount().ok.body.json.user.email
                    == alice.email.lowercased())
            // The transaction is gone; the same code does not work again.
            #expect(try await transaction.answer(.totp, code).problem == "transaction_not_found 404")
            var replay = try await Transaction.start(relay, email: alice.email, identity: alice.identity)
            _ = try await replay.pass(.password, alice.password)
            _ = try await replay.pass(.arithmetic, Self.arithmeticAnswer(replay.step))
            #expect(try await replay.answer(.totp, code).problem == "invalid_credentials 401")
        }
    }

    @Test("a new device adds the e-mail code, sent to the development outbox", arguments: TestDatabaseKind.allCases)
    func stepUp(kind: TestDatabaseKind) async throws {
        // No delays after a wrong answer here; the throttle has its own tests.
        try await TestRelay.run(kind, adjust: { $0.signInPolicy.baseDelay = 0 }) { relay in
            let bob = try await TestUser.make(relay, name: "bob")
            _ = try await bob.client.updateAuthSettings(
                body: .json(
                    .init(
                        password: bob.password, chain: [.password, .arithmetic], mapping: Self.mappingText,
                        codeLength: 5))
            ).ok
            // The known device: the chain only.
            var known = try await Transaction.start(relay, email: bob.email, identity: bob.identity)
            _ = try await known.pass(.password, bob.password)
            #expect(try await known.pass(.arithmetic, Self.arithmeticAnswer(known.step)) != nil)

            let tablet = try PrivateIdentity.generate()
            var transaction = try await Transaction.start(relay, email: bob.email, identity: tablet)
            _ = try await transaction.pass(.password, bob.password)
            _ = try await transaction.pass(.arithmetic, Self.arithmeticAnswer(transaction.step))
            #expect(transaction.step?.method == .emailCode)
            #expect(transaction.step?.prompt.contains("b…@example.com") == true)
            let code = try Self.lastCode(relay)
            #expect(code.count == 5)
            #expect(try await transaction.answer(.emailCode, "WRONG").problem == "invalid_credentials 401")
            // A resend within the cool-down is refused; the code still works, in any case.
            let resend = try await relay.client().currentSignInStep(
                path: .init(transactionId: transaction.id), query: .init(resend: true))
            #expect(try resend.problem == "rate_limited 429")
            let session = try #require(try await transaction.pass(.emailCode, code.lowercased()))
            #expect(session.deviceId == tablet.deviceID.canonicalString)
        }
    }

    @Test("a resent e-mail code replaces the old one")
    func resend() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            $0.emailCodeResendSeconds = 60
            $0.signInPolicy.baseDelay = 0
        }) { relay in
            let erin = try await TestUser.make(relay, name: "erin")
            _ = try await erin.client.updateAuthSettings(
                body: .json(.init(password: erin.password, chain: [.emailCode, .password]))
            ).ok
            var transaction = try await Transaction.start(relay, email: erin.email, identity: erin.identity)
            #expect(transaction.step?.method == .emailCode)
            let first = try Self.lastCode(relay)
            #expect(
                try await transaction.client.currentSignInStep(
                    path: .init(transactionId: transaction.id), query: .init(resend: true)
                ).problem
                    == "rate_limited 429")
            clock.advance(by: 61)
            let before = try SignInOutbox.codes(dataDirectory: relay.directory)
            _ = try await transaction.current(resend: true)
            let sent = try SignInOutbox.codes(dataDirectory: relay.directory).filter { before[$0.key] == nil }
            #expect(sent.count == 1, "one new message")
            let second = try #require(sent.values.first)
            // Six random characters: the same code again has a chance of about one in a billion.
            #expect(second != first)
            #expect(try await transaction.answer(.emailCode, first).problem == "invalid_credentials 401")
            _ = try await transaction.pass(.emailCode, second)
            #expect(transaction.step?.method == .password)
            #expect(try await transaction.pass(.password, erin.password) != nil)
        }
    }

    @Test("fresh challenges after a wrong answer, five wrong answers close it, unknown e-mails and ids")
    func failures() async throws {
        try await TestRelay.run(adjust: { $0.signInPolicy.baseDelay = 0 }) { relay in
            let carol = try await TestUser.make(relay, name: "carol")
            _ = try await carol.client.updateAuthSettings(
                body: .json(
                    .init(
                        password: carol.password, chain: [.arithmetic, .password], operands: 8,
                        mapping: Self.mappingText))
            ).ok
            var transaction = try await Transaction.start(relay, email: carol.email, identity: carol.identity)
            #expect(transaction.step?.method == .arithmetic)
            var seen: Set<String> = [try #require(transaction.step?.challenge)]
            for attempt in 1...5 {
                let wrong = String((Int(try Self.arithmeticAnswer(transaction.step)) ?? 0) + 1)
                let result = try await transaction.answer(.arithmetic, wrong)
                if attempt < 5 {
                    #expect(try result.problem == "invalid_credentials 401")
                    transaction.step = try await transaction.current()
                    seen.insert(try #require(transaction.step?.challenge))
                } else {
                    #expect(try result.problem == "transaction_expired 410")
                }
            }
            #expect(seen.count >= 4, "each wrong answer spends the challenge")

            // An e-mail without an account looks the same until the password fails.
            var nobody = try await Transaction.start(relay, email: "nobody@example.com", identity: carol.identity)
            #expect(nobody.step?.method == .password)
            #expect(try await nobody.answer(.password, "any password at all").problem == "invalid_credentials 401")
            nobody.step = try await nobody.current()
            #expect(nobody.step?.method == .password)

            let unknown = try await relay.client().currentSignInStep(
                path: .init(transactionId: String(repeating: "x", count: 43)))
            #expect(try unknown.problem == "transaction_not_found 404")
        }
    }

    @Test("wrong answers lock the account's sign-in, for the right answers too, and the lock lifts")
    func lockout() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            $0.signInPolicy.baseDelay = 0
            $0.signInPolicy.lockoutThreshold = 3
            $0.signInPolicy.lockoutSeconds = 600
        }) { relay in
            let judy = try await TestUser.make(relay, name: "judy")
            _ = try await judy.client.updateAuthSettings(
                body: .json(
                    .init(
                        password: judy.password, chain: [.password, .arithmetic],
                        mapping: Self.mappingText))
            ).ok
            var transaction = try await Transaction.start(relay, email: judy.email, identity: judy.identity)
            _ = try await transaction.pass(.password, judy.password)
            for _ in 0..<3 {
                #expect(try await transaction.answer(.arithmetic, "not a number").problem == "invalid_credentials 401")
                transaction.step = try await transaction.current()
            }
            // Locked: even the right answer, and a new transaction, are refused.
            #expect(
                try await transaction.answer(.arithmetic, Self.arithmeticAnswer(transaction.step)).problem
                    == "locked_out 429")
            let blocked = try await relay.client().startSignIn(
                body: .json(try await .proving(email: judy.email, identity: judy.identity, on: relay.client())))
            #expect(try blocked.problem == "locked_out 429")
            clock.advance(by: 599)
            let stillBlocked = try await relay.client().startSignIn(
                body: .json(try await .proving(email: judy.email, identity: judy.identity, on: relay.client())))
            #expect(try stillBlocked.problem == "locked_out 429")
            clock.advance(by: 2)
            var later = try await Transaction.start(relay, email: judy.email, identity: judy.identity)
            _ = try await later.pass(.password, judy.password)
            #expect(try await later.pass(.arithmetic, Self.arithmeticAnswer(later.step)) != nil)
        }
    }

    @Test("a transaction expires")
    func expiry() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            $0.signInTransactionLifetime = 600
        }) { relay in
            let ivan = try await TestUser.make(relay, name: "ivan")
            let late = try await Transaction.start(relay, email: ivan.email, identity: ivan.identity)
            clock.advance(by: 599)
            _ = try await late.current()
            clock.advance(by: 2)
            #expect(try await late.answer(.password, ivan.password).problem == "transaction_expired 410")
            #expect(
                try await late.client.currentSignInStep(path: .init(transactionId: late.id)).problem
                    == "transaction_expired 410")
        }
    }

    @Test(
        "settings need the password and are checked: no biometrics on the server, arithmetic needs a mapping, TOTP a current code"
    )
    func settingsValidation() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: { $0.now = clock.now }) { relay in
            let dave = try await TestUser.make(relay, name: "dave")
            func update(_ body: Components.Schemas.AuthSettingsUpdate) async throws -> String? {
                try await dave.client.updateAuthSettings(body: .json(body)).problem
            }
            #expect(
                try await update(.init(password: dave.password, chain: [.password, .biometric]))
                    == "biometric_unavailable 400")
            #expect(
                try await update(.init(password: dave.password, chain: [.password, .arithmetic]))
                    == "invalid_mapping 400")
            // A chain without the password is refused, whatever else it has (docs/SECURITY.md).
            #expect(try await update(.init(password: dave.password, chain: [])) == "invalid_chain 400")
            #expect(
                try await update(.init(password: dave.password, chain: [.arithmetic], mapping: Self.mappingText))
                    == "invalid_chain 400")
            #expect(try await update(.init(password: dave.password, chain: [.emailCode])) == "invalid_chain 400")
            #expect(
                try await update(.init(password: dave.password, chain: [.password, .password])) == "invalid_chain 400")
            #expect(
                try await update(.init(password: dave.password, chain: [.password], operands: 9))
                    == "invalid_operands 400")
            #expect(
                try await update(.init(password: dave.password, chain: [.password], codeLength: 3))
                    == "invalid_code_length 400")
            #expect(
                try await update(.init(password: dave.password, chain: [.password, .arithmetic], mapping: "+=*"))
                    == "invalid_mapping 400")
            let secret = Base32.encode(TOTP.generateSecret())
            #expect(
                try await update(
                    .init(password: dave.password, chain: [.password, .totp], totpSecret: secret, totpCode: "123456"))
                    == "invalid_totp_code 400")
            #expect(
                try await update(.init(password: dave.password, chain: [.password, .totp])) == "invalid_totp_secret 400"
            )
            #expect(
                try await update(.init(password: "not the password", chain: [.password])) == "invalid_credentials 401")
            clock.advance(by: 60)  // past the delay after one wrong password
            let shown = try await dave.client.getAuthSettings().ok.body.json
            #expect(shown.chain == [.password] && !shown.arithmeticConfigured && !shown.totpEnrolled)
            // The mapping is stored encrypted: the server's files do not hold it.
            _ = try await dave.client.updateAuthSettings(
                body: .json(
                    .init(
                        password: dave.password, chain: [.password, .arithmetic],
                        mapping: Self.mappingText))
            ).ok
            let database =
                try Data(contentsOf: relay.directory.appendingPathComponent("relay.sqlite"))
                + ((try? Data(contentsOf: relay.directory.appendingPathComponent("relay.sqlite-wal"))) ?? Data())
            #expect(database.range(of: Data("multiply".utf8)) == nil)
        }
    }
}
