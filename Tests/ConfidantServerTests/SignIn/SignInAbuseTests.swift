import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Crypto
import Foundation
import Testing

/// Sign-in as an attacker tries it: in parallel, with a known password, by flooding starts.
@Suite("Sign-in under attack")
struct SignInAbuseTests {
    typealias Transaction = SignInTransactionTests.Transaction

    @Test(
        "50 wrong passwords at once: no more pass the check than the lock-out allows",
        arguments: TestDatabaseKind.allCases)
    func parallelWrongPasswords(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(
            kind,
            adjust: {
                $0.signInPolicy.baseDelay = 0
                // The 50 attempts queue on one account's row lock: on a slow or busy machine the
                // last wait long for a connection (TestRelay allows 120 s, production 10 s).
                $0.signInPolicy.lockoutThreshold = 5
            }
        ) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            // All 50 at once (the shared client would open 8 connections and queue the rest).
            let answers = try await relay.withParallelClient(connections: 100) { client in
                try await withThrowingTaskGroup(of: String?.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            try await client.signIn(
                                body: .json(
                                    try await .proving(
                                        email: alice.email, password: "wrong password \(index)",
                                        identity: alice.identity, on: client))
                            ).problem
                        }
                    }
                    return try await group.reduce(into: [String: Int]()) { counts, answer in
                        counts[answer ?? "ok", default: 0] += 1
                    }
                }
            }
            #expect(answers["invalid_credentials 401"] == 5, "\(answers)")
            #expect(answers["locked_out 429"] == 45, "\(answers)")
        }
    }

    @Test(
        "50 wrong answers at once to one step: the transaction counts every one and closes at 5",
        arguments: TestDatabaseKind.allCases)
    func parallelWrongAnswers(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(
            kind,
            adjust: {
                $0.signInPolicy.baseDelay = 0
                // The 50 attempts queue on one account's row lock: on a slow or busy machine the
                // last wait long for a connection (TestRelay allows 120 s, production 10 s).
                $0.signInPolicy.lockoutThreshold = 1000
            }
        ) { relay in
            let carol = try await TestUser.make(relay, name: "carol")
            _ = try await carol.client.updateAuthSettings(
                body: .json(
                    .init(
                        password: carol.password, chain: [.password, .arithmetic],
                        mapping: SignInTransactionTests.mappingText))
            ).ok
            var transaction = try await Transaction.start(relay, email: carol.email, identity: carol.identity)
            _ = try await transaction.pass(.password, carol.password)
            // All 50 at once, as in the test above.
            let answers = try await relay.withParallelClient(connections: 100) { client in
                let current = Transaction(client: client, id: transaction.id, step: transaction.step)
                return try await withThrowingTaskGroup(of: String?.self) { group in
                    for _ in 0..<50 {
                        group.addTask { try await current.answer(.arithmetic, "no number").problem }
                    }
                    return try await group.reduce(into: [String: Int]()) { counts, answer in
                        counts[answer ?? "ok", default: 0] += 1
                    }
                }
            }
            #expect(answers["invalid_credentials 401"] == 4, "\(answers)")
            #expect(answers["ok"] == nil)
            #expect(
                try await transaction.client.currentSignInStep(path: .init(transactionId: transaction.id)).problem
                    == "transaction_not_found 404")
        }
    }

    @Test("a right password that needs a further step does not reset the failures of that step")
    func partialSuccessDoesNotReset() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            $0.signInPolicy.baseDelay = 0
            $0.signInPolicy.lockoutThreshold = 3
        }) { relay in
            let dave = try await TestUser.make(relay, name: "dave")
            let secret = TOTP.generateSecret()
            let code = TOTP(secret: secret).code(at: UInt64(clock.now().timeIntervalSince1970))
            _ = try await dave.client.updateAuthSettings(
                body: .json(
                    .init(
                        password: dave.password, chain: [.password, .totp], totpSecret: Base32.encode(secret),
                        totpCode: code))
            ).ok
            func wrongCode() async throws -> String? {
                var transaction = try await Transaction.start(relay, email: dave.email, identity: dave.identity)
                _ = try await transaction.pass(.password, dave.password)
                return try await transaction.answer(.totp, "000000").problem
            }
            #expect(try await wrongCode() == "invalid_credentials 401")
            #expect(try await wrongCode() == "invalid_credentials 401")
            // Someone who knows the password asks for a session: the password is right, a step is missing.
            let plain = try await relay.client().signIn(
                body: .json(
                    try await .proving(
                        email: dave.email, password: dave.password, identity: dave.identity, on: relay.client())))
            #expect(try plain.problem == "step_up_required 403")
            // That did not clear the two failures: the third locks.
            #expect(try await wrongCode() == "invalid_credentials 401")
            let locked = try await relay.client().startSignIn(
                body: .json(
                    try await .proving(email: dave.email, identity: dave.identity, on: relay.client())))
            #expect(try locked.problem == "locked_out 429")
        }
    }

    @Test("sign-ins started for one account are limited (no flood of e-mail codes); expired ones are purged")
    func startFlood() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            // Four: one for the sign-up's own first sign-in, three for the test.
            $0.signInStarts.perAccount = .init(limit: 4, window: 600)
        }) { relay in
            let erin = try await TestUser.make(relay, name: "erin")
            _ = try await erin.client.updateAuthSettings(
                body: .json(.init(password: erin.password, chain: [.emailCode, .password]))
            ).ok
            func start() async throws -> String? {
                try await relay.client().startSignIn(
                    body: .json(
                        try await .proving(email: erin.email, identity: erin.identity, on: relay.client()))
                ).problem
            }
            let mailbox = relay.directory.appendingPathComponent("outbox")
            let before = (try? FileManager.default.contentsOfDirectory(atPath: mailbox.path).count) ?? 0
            for _ in 0..<3 { #expect(try await start() == nil) }
            #expect(try await start() == "rate_limited 429")
            #expect(try await start() == "rate_limited 429")
            let after = (try? FileManager.default.contentsOfDirectory(atPath: mailbox.path).count) ?? 0
            #expect(after - before == 3, "three codes sent, not five")
            // The window passes and the old transactions expire: a new start purges them.
            clock.advance(by: 700)
            #expect(try await start() == nil)
            #expect(try await relay.transactionCount() == 1)
        }
    }

    @Test("an e-mail code is stored keyed: a copy of the database does not give it away")
    func emailCodesAreKeyed() async throws {
        try await TestRelay.run { relay in
            let erin = try await TestUser.make(relay, name: "erin")
            _ = try await erin.client.updateAuthSettings(
                body: .json(.init(password: erin.password, chain: [.emailCode, .password]))
            ).ok
            _ = try await Transaction.start(relay, email: erin.email, identity: erin.identity)
            let code = try SignInOutbox.latestCode(dataDirectory: relay.directory)
            let database =
                try Data(contentsOf: relay.directory.appendingPathComponent("relay.sqlite"))
                + ((try? Data(contentsOf: relay.directory.appendingPathComponent("relay.sqlite-wal"))) ?? Data())
            // What an unkeyed hash would have stored, and so what an attacker would search for.
            for candidate in [code.uppercased(), code.lowercased(), code] {
                #expect(database.range(of: Data(SHA256.hash(data: Data(candidate.utf8)))) == nil)
            }
        }
    }
}

extension TestRelay {
    /// Sign-in transactions stored, counted in the relay's SQLite file.
    func transactionCount() async throws -> Int {
        let output = try await PythonScript.run(
            "sqlite_count.py", [directory.appendingPathComponent("relay.sqlite").path, "sign_in_transactions"])
        return Int(output) ?? -1
    }
}
