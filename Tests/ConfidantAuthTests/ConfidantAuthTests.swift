import Testing

@testable import ConfidantAuth

typealias SplitMix64 = SeededRandomNumberGenerator

extension SeededRandomNumberGenerator {
    init(state: UInt64) { self.init(seed: state) }
}

@Suite struct ArithmeticChallengeTests {
    @Test func seedWorkedExampleGivesTwo() throws {
        // Seed 003: + ↦ ×, − ↦ ÷, × ↦ +, ÷ ↦ −; "34 − 17 × 5 ÷ 6 + 2" means 34 ÷ 17 + 5 − 6 × 2 = 2.
        let mapping = try ArithmeticMapping(parsing: "+=*,-=/,*=+,/=-")
        let challenge = try ArithmeticChallenge(operands: [34, 17, 5, 6, 2], signs: [.minus, .times, .divide, .plus])
        #expect(challenge.answer(under: mapping) == 2)
        #expect(challenge.description == "34 − 17 × 5 ÷ 6 + 2")
        // Without the mapping, left to right: ((34 − 17) × 5) ÷ 6 is not exact.
        #expect(challenge.answer(under: try ArithmeticMapping(ArithmeticMapping.natural)) == nil)
    }

    @Test func hundredThousandChallengesAreExactAndBounded() throws {
        var generator = SplitMix64(state: 42)
        let mappings = ArithmeticMapping.all
        #expect(mappings.count == 256)
        for index in 0..<100_000 {
            let mapping = mappings[index % mappings.count]
            let challenge = try ArithmeticChallenge.generate(
                operands: 2 + index % 7, mapping: mapping, using: &generator)
            #expect(challenge.answer(under: mapping) != nil, "inexact or unbounded: \(challenge)")
        }
    }

    @Test func mappingsAndChallengesAreValidated() {
        #expect(throws: AuthError.self) { try ArithmeticMapping(parsing: "+=*,-=/") }
        #expect(throws: AuthError.self) { try ArithmeticMapping(parsing: "+=*,+=/,*=+,/=-") }
        #expect(throws: AuthError.self) { try ArithmeticMapping(parsing: "+=%,-=/,*=+,/=-") }
        #expect(throws: AuthError.self) { try ArithmeticChallenge(operands: [1], signs: []) }
        #expect(throws: AuthError.self) {
            try ArithmeticChallenge(operands: Array(1...9), signs: Array(repeating: .plus, count: 8))
        }
        var generator = SplitMix64(state: 1)
        #expect(throws: AuthError.self) {
            try ArithmeticChallenge.generate(
                operands: 9, mapping: try ArithmeticMapping(ArithmeticMapping.natural), using: &generator)
        }
    }
}

@Suite struct TOTPTests {
    /// RFC 6238 Appendix B, SHA-1 rows (8 digits, the 20-byte ASCII secret "12345678901234567890").
    @Test(arguments: [
        (UInt64(59), "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"),
        (1_234_567_890, "89005924"), (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
    ])
    func rfc6238Vectors(time: UInt64, expected: String) {
        let totp = TOTP(secret: Array("12345678901234567890".utf8), digits: 8)
        #expect(totp.code(at: time) == expected)
    }

    @Test func driftWindowAndReplay() {
        let totp = TOTP(secret: Array("12345678901234567890".utf8))
        let now: UInt64 = 1_700_000_000
        let current = totp.code(at: now)
        let step = totp.step(at: now)
        #expect(totp.verify(current, at: now, lastAcceptedStep: nil) == step)
        #expect(totp.verify(totp.code(at: now - 30), at: now, lastAcceptedStep: nil) == step - 1)
        #expect(totp.verify(totp.code(at: now + 30), at: now, lastAcceptedStep: nil) == step + 1)
        #expect(totp.verify(totp.code(at: now - 90), at: now, lastAcceptedStep: nil) == nil)
        // A code cannot be used twice, nor an older one after a newer.
        #expect(totp.verify(current, at: now, lastAcceptedStep: step) == nil)
        #expect(totp.verify(totp.code(at: now - 30), at: now, lastAcceptedStep: step) == nil)
        #expect(totp.verify("000000", at: now, lastAcceptedStep: nil) == nil || totp.code(at: now) == "000000")
    }

    @Test func provisioningURIAndBase32() throws {
        // RFC 4648 §10 vectors.
        #expect(Base32.encode(Array("foobar".utf8)) == "MZXW6YTBOI======")
        #expect(Base32.encode(Array("f".utf8)) == "MY======")
        #expect(try Base32.decode("MZXW6YTBOI======") == Array("foobar".utf8))
        #expect(try Base32.decode("mzxw 6ytb oi") == Array("foobar".utf8))
        #expect(throws: AuthError.invalidSecret) { try Base32.decode("MZ1W") }
        let uri = TOTP(secret: Array("12345678901234567890".utf8)).provisioningURI(account: "ann@example.com")
        #expect(
            uri
                == "otpauth://totp/Confidant:ann@example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Confidant&algorithm=SHA1&digits=6&period=30"
        )
    }
}

@Suite struct CodesAndAddressesTests {
    @Test func oneTimeCodes() throws {
        var generator = SplitMix64(state: 7)
        for length in 4...8 {
            let code = try OneTimeCode.generate(length: length, using: &generator)
            #expect(code.count == length)
            #expect(code.allSatisfy { OneTimeCode.alphabet.contains($0) })
            #expect(OneTimeCode.matches(" " + code.lowercased(), code))
        }
        #expect(throws: AuthError.invalidCodeLength(3)) { try OneTimeCode.generate(length: 3) }
        #expect(throws: AuthError.invalidCodeLength(9)) { try OneTimeCode.generate(length: 9) }
        #expect(!OneTimeCode.alphabet.contains { "0O1IL5S2Z8B".contains($0) })
        #expect(!OneTimeCode.matches("ABCD", "ABCE"))
        #expect(abs(OneTimeCode.entropyBits(length: 6) - 27.86) < 0.01)
    }

    @Test func emailValidationIsNotInverted() throws {
        #expect(try EmailAddress("  Ann.Smith+tag@Example.COM ").value == "ann.smith+tag@example.com")
        for bad in [
            "", "ann", "ann@", "@example.com", "ann@example", "ann@@example.com", "ann..b@example.com", "ann@-x.com",
            "a b@example.com",
        ] {
            #expect(throws: AuthError.self, "\(bad) accepted") { try EmailAddress(bad) }
        }
    }

    @Test func constantTimeEquality() {
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equal([UInt8](), [0]))
    }
}

@Suite struct RiskPolicyTests {
    let policy = RiskPolicy()

    @Test func knownDeviceGetsTheChainNewOnesStepUp() {
        let known = SignInContext(configuredChain: [.password, .totp], knownDevice: true, knownAddress: true)
        #expect(policy.decide(known) == .proceed(steps: [.password, .totp], delay: 0))
        let newDevice = SignInContext(configuredChain: [.password], knownDevice: false, knownAddress: true)
        #expect(policy.decide(newDevice) == .proceed(steps: [.password, .emailCode], delay: 0))
        let newAddress = SignInContext(
            configuredChain: [.password, .emailCode], knownDevice: true, knownAddress: false)
        #expect(policy.decide(newAddress) == .proceed(steps: [.password, .emailCode], delay: 0))
    }

    @Test func delaysGrowAndLockOutEngagesAndLifts() {
        var context = SignInContext(configuredChain: [.password], knownDevice: true, knownAddress: true)
        var delays: [Double] = []
        for failures in 1...9 {
            context.accountFailures = failures
            if case .proceed(_, let delay) = policy.decide(context) { delays.append(delay) }
        }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30, 30, 30])
        context.accountFailures = 10
        context.secondsSinceLastFailure = 60
        #expect(policy.decide(context) == .locked(retryAfter: 840))
        context.secondsSinceLastFailure = 15 * 60
        #expect(policy.decide(context) == .proceed(steps: [.password], delay: 0))
        // Per address too, whatever the account.
        let address = SignInContext(
            configuredChain: [.password], knownDevice: true, knownAddress: true, addressFailures: 12,
            secondsSinceLastFailure: 1)
        #expect(policy.decide(address) == .locked(retryAfter: 899))
    }
}

@Suite struct ArithmeticAnalysisTests {
    @Test func observationsPinTheMappingDown() throws {
        var generator = SplitMix64(state: 3)
        let result = try ArithmeticAnalysis.simulate(operands: 4, trials: 30, using: &generator)
        #expect(result.meanObservations >= 1)
        #expect(result.meanObservations < 40)
        #expect(result.blindGuessProbability >= 1.0 / 256)
        #expect(result.blindGuessProbability <= 1)
    }
}
