import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

struct Party {
    let user = UUID()
    let identity: PrivateIdentity
    init() throws { identity = try PrivateIdentity.generate() }
    var publicIdentity: PublicIdentity { identity.publicIdentity }
}

@Suite struct EnvelopeTests {
    let alice: Party
    let bob: Party

    init() throws {
        alice = try Party()
        bob = try Party()
    }

    func seal(_ message: [UInt8], suite: EnvelopeSuite, signed: Bool = false) throws -> SealedEnvelope {
        try SealedEnvelope.seal(
            message, from: alice.identity, senderUserID: alice.user, to: bob.publicIdentity, recipientUserID: bob.user,
            suite: suite, signed: signed)
    }

    func open(_ bytes: some DataProtocol) throws -> Data {
        try SealedEnvelope(serialized: bytes).open(
            as: bob.identity, recipientUserID: bob.user, from: alice.publicIdentity)
    }

    @Test(arguments: EnvelopeSuite.allCases, [0, 1, 31, 1000, 65_536])
    func roundTrip(suite: EnvelopeSuite, size: Int) throws {
        let message = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let messageID = UUID()
        let envelope = try SealedEnvelope.seal(
            message, from: alice.identity, senderUserID: alice.user, to: bob.publicIdentity, recipientUserID: bob.user,
            suite: suite, messageID: messageID, timestamp: Date(timeIntervalSince1970: 1_700_000_000.123))
        let parsed = try SealedEnvelope(serialized: envelope.serialized)
        #expect(parsed == envelope)
        #expect(parsed.header.messageID == messageID)
        #expect(parsed.header.timestampMilliseconds == 1_700_000_000_123)
        #expect(parsed.header.sender == DeviceAddress(userID: alice.user, deviceID: alice.identity.deviceID))
        #expect(parsed.header.suite == suite)
        #expect(Array(try open(envelope.serialized)) == message)
    }

    @Test func seedLegacyIsExactlyTheSeedChat() throws {
        let message = Array("Привет мир!".utf8)
        let envelope = try seal(message, suite: .seedLegacy)
        let keyString = try SeedChat.keyString(
            privateKey: alice.identity.agreementKey, peerPublicKey: bob.publicIdentity.agreementKey)
        #expect(Array(envelope.ciphertext) == (try SeedChat.crypt(message, keyString: keyString)))
        #expect(envelope.encapsulatedKey.isEmpty)
        #expect(EnvelopeSuite.seedLegacy.warning != nil)
        #expect(EnvelopeSuite.default.warning == nil)
    }

    @Test func seedLegacyHasNoIntegrity() throws {
        // Documented weakness: a flipped ciphertext bit flips the same plaintext bit, undetected.
        let envelope = Array(try seal(Array("pay 10".utf8), suite: .seedLegacy).serialized)
        var tampered = envelope
        tampered[tampered.count - 2] ^= UInt8(ascii: "1") ^ UInt8(ascii: "9")
        #expect(String(decoding: try open(tampered), as: UTF8.self) == "pay 90")
    }

    @Test func paddingHidesShortLengths() throws {
        let short = try seal(Array("ok".utf8), suite: .p256AES256GCM)
        let longer = try seal(Array("see you at the station at nine".utf8).prefix(20).map { $0 }, suite: .p256AES256GCM)
        #expect(short.ciphertext.count == longer.ciphertext.count)
    }

    @Test(arguments: [EnvelopeSuite.p256AES256GCM, .x25519ChaChaPoly, .xwingAES256GCM])
    func tamperingAnyRegionIsDetected(suite: EnvelopeSuite) throws {
        let bytes = Array(try seal(Array("attack at dawn".utf8), suite: suite).serialized)
        let signed = suite.requiresSignature
        // A byte of the header (message id), of enc, of the ciphertext, and the last byte.
        for position in [70, 95, bytes.count - (signed ? 70 : 5), bytes.count - 1] {
            var tampered = bytes
            tampered[position] ^= 0x04
            #expect(throws: EnvelopeError.self) { try open(tampered) }
            do {
                _ = try open(tampered)
            } catch let error as EnvelopeError {
                #expect(error == (signed ? .badSignature : .tampered))
            }
        }
    }

    @Test func signedEnvelopeRejectsBadSignature() throws {
        let bytes = Array(try seal(Array("signed".utf8), suite: .p256AES256GCM, signed: true).serialized)
        #expect(try SealedEnvelope(serialized: bytes).signature != nil)
        var tampered = bytes
        tampered[bytes.count - 10] ^= 0x01
        #expect(throws: EnvelopeError.badSignature) { try open(tampered) }
        #expect(String(decoding: try open(bytes), as: UTF8.self) == "signed")
    }

    @Test func xwingWithoutSignatureIsRefused() throws {
        var bytes = Array(try seal(Array("pq".utf8), suite: .xwingAES256GCM).serialized)
        bytes.removeLast(64)
        bytes[2] = 0  // clear the signed flag
        #expect(throws: EnvelopeError.signatureRequired(.xwingAES256GCM)) { try open(bytes) }
    }

    @Test func notForThisRecipient() throws {
        let carol = try Party()
        let envelope = try seal(Array("for bob".utf8), suite: .p256AES256GCM)
        #expect(
            throws: EnvelopeError.notForThisRecipient(
                expected: DeviceAddress(userID: carol.user, deviceID: carol.identity.deviceID),
                actual: DeviceAddress(userID: bob.user, deviceID: bob.identity.deviceID))
        ) {
            try envelope.open(as: carol.identity, recipientUserID: carol.user, from: alice.publicIdentity)
        }
    }

    @Test func wrongSenderIdentity() throws {
        let mallory = try Party()
        let envelope = try seal(Array("from alice".utf8), suite: .p256AES256GCM)
        #expect(
            throws: EnvelopeError.senderMismatch(
                header: envelope.header.sender, identityDevice: mallory.identity.deviceID.canonicalString)
        ) {
            try envelope.open(as: bob.identity, recipientUserID: bob.user, from: mallory.publicIdentity)
        }
    }

    @Test func forgedSenderFailsAuthMode() throws {
        // Mallory seals to Bob but writes Alice's ids in the header: HPKE Auth mode rejects it.
        let mallory = try Party()
        let forged = try SealedEnvelope.seal(
            Array("hi bob, it's alice".utf8), from: mallory.identity, senderUserID: alice.user,
            to: bob.publicIdentity, recipientUserID: bob.user)
        var bytes = Array(forged.serialized)
        withUnsafeBytes(of: alice.identity.deviceID.uuid) { bytes.replaceSubrange(19..<35, with: $0) }
        #expect(throws: EnvelopeError.tampered) { try open(bytes) }
    }

    @Test func truncatedAtEveryLength() throws {
        let bytes = Array(try seal(Array("short".utf8), suite: .p256AES256GCM, signed: true).serialized)
        for length in 0..<bytes.count {
            #expect(throws: EnvelopeError.truncated) { try SealedEnvelope(serialized: bytes.prefix(length)) }
        }
        #expect(throws: EnvelopeError.malformed("1 unexpected bytes after the envelope")) {
            try SealedEnvelope(serialized: bytes + [0])
        }
    }

    @Test func unknownVersionSuiteAndFlags() throws {
        let bytes = Array(try seal(Array("x".utf8), suite: .p256AES256GCM).serialized)
        var version = bytes
        version[0] = 2
        #expect(throws: EnvelopeError.otherVersion(found: 2, reader: 1)) { try SealedEnvelope(serialized: version) }
        #expect(
            EnvelopeError.otherVersion(found: 2, reader: 1).description
                == "this is a version 2 envelope (a session message, docs/PROTOCOL.md §9); this reader takes version 1 only"
        )
        version[0] = 7
        #expect(throws: EnvelopeError.unknownVersion(7)) { try SealedEnvelope(serialized: version) }
        #expect(EnvelopeError.unknownVersion(7).description.contains("newer than this Confidant"))
        var suite = bytes
        suite[1] = 0x42
        #expect(throws: EnvelopeError.unknownSuite(0x42)) { try SealedEnvelope(serialized: suite) }
        var flags = bytes
        flags[2] = 0x80
        #expect(throws: EnvelopeError.malformed("unknown flags 0x80")) { try SealedEnvelope(serialized: flags) }
    }

    @Test func suiteNames() {
        for suite in EnvelopeSuite.allCases { #expect(EnvelopeSuite(name: suite.name) == suite) }
        #expect(EnvelopeSuite(name: "rot13") == nil)
    }
}

@Suite struct PadmeTests {
    @Test func knownLengths() {
        // Worked by hand from the PURBs paper's definition.
        #expect(Padme.paddedLength(9) == 10)
        #expect(Padme.paddedLength(100) == 104)
        #expect(Padme.paddedLength(1000) == 1024)
        #expect(Padme.paddedLength(1024) == 1024)
        #expect(Padme.paddedLength(1025) == 1088)  // E = 10, S = 4: round up to a multiple of 64
        #expect(Padme.paddedLength(1) == 1)
    }

    @Test func overheadIsBounded() {
        for length in stride(from: 2, to: 200_000, by: 97) {
            let padded = Padme.paddedLength(length)
            #expect(padded >= length)
            #expect(Double(padded - length) / Double(length) <= 0.12)
        }
    }

    @Test("a padded message has one form: more or less padding than Padmé's is refused")
    func paddingIsExact() {
        let padded = Padme.pad(Array("hello".utf8))
        #expect(Padme.unpad(padded) == Array("hello".utf8))
        #expect(Padme.unpad(padded + [0]) == nil, "over-padded")
        #expect(Padme.unpad(padded.dropLast()) == nil, "under-padded")
        let long = Padme.pad([UInt8](repeating: 1, count: 1000))
        #expect(Padme.unpad(long + [UInt8](repeating: 0, count: 64)) == nil)
        #expect(Padme.unpad(long) != nil)
    }

    @Test func padUnpad() {
        for size in [0, 1, 27, 28, 29, 500] {
            let message = [UInt8](repeating: 0xAB, count: size)
            let padded = Padme.pad(message)
            #expect(padded.count >= Padme.minimumLength)
            #expect(Padme.unpad(padded) == message)
        }
        #expect(Padme.unpad([0, 0, 0, 9, 1]) == nil)  // length past the end
        #expect(Padme.unpad([0, 0, 0, 1, 1, 0, 7]) == nil)  // non-zero padding
        #expect(Padme.unpad([0, 0]) == nil)
    }
}
