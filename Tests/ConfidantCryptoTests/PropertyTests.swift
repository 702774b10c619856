import Crypto
import Foundation
import PropertyBased
import Testing

@testable import ConfidantCrypto

/// Properties over generated inputs (swift-property-based shrinks any failure to a small case).
@Suite struct PropertyTests {
    static let alice = try? PrivateIdentity.generate()
    static let bob = try? PrivateIdentity.generate()

    @Test func sblockIsAnInvolutionAndChunkingDoesNotMatter() async {
        await propertyCheck(
            count: 200, input: Gen.uint8().array(of: 0...1_500), Gen.uint8().array(of: 1...64), Gen.int(in: 1...600)
        ) { data, key, chunk in
            let once = try SBlockCipher.process(data, key: key)
            #expect(try SBlockCipher.process(once, key: key) == data)
            var cipher = try SBlockCipher(key: key)
            var streamed: [UInt8] = []
            var offset = 0
            while offset < data.count {
                var part = Array(data[offset..<min(data.count, offset + chunk)])
                cipher.apply(to: &part)
                streamed += part
                offset += chunk
            }
            #expect(streamed == once)
        }
    }

    @Test func envelopesRoundTripAtAnySize() async throws {
        let alice = try #require(Self.alice)
        let bob = try #require(Self.bob)
        let (aliceUser, bobUser) = (UUID(), UUID())
        await propertyCheck(count: 60, input: Gen.int(in: 0...(1 << 20)), Gen.int(in: 0...2)) { size, suiteIndex in
            let suite = [EnvelopeSuite.p256AES256GCM, .x25519ChaChaPoly, .xwingAES256GCM][suiteIndex]
            let message = [UInt8](repeating: UInt8(truncatingIfNeeded: size), count: size)
            let envelope = try SealedEnvelope.seal(
                message, from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser,
                suite: suite)
            let opened = try SealedEnvelope(serialized: envelope.serialized).open(
                as: bob, recipientUserID: bobUser, from: alice.publicIdentity)
            #expect(Array(opened) == message)
        }
    }

    @Test func garbageNeverCrashesTheParsers() async {
        await propertyCheck(count: 2_000, input: Gen.uint8().array(of: 0...400)) { bytes in
            _ = try? SealedEnvelope(serialized: bytes)
            _ = try? PublicIdentity(serialized: bytes)
            _ = try? IdentityKeyFile.open(bytes, passphrase: "x")
            _ = try? SeedKeyString.p256PublicKey(String(decoding: bytes, as: UTF8.self))
            _ = Padme.unpad(bytes)
        }
    }

    @Test func seedKeyStringsRoundTrip() async {
        await propertyCheck(count: 300, input: Gen.uint8().array(of: 0...96)) { raw in
            let decoded = try SeedKeyString.decode(SeedKeyString.encode(raw))
            #expect(decoded == Data(raw))
        }
    }
}

@Suite struct ExhaustiveTamperTests {
    /// Flips one bit in every single byte of a signed and an unsigned envelope: each must be refused.
    @Test(arguments: [EnvelopeSuite.p256AES256GCM, .x25519ChaChaPoly, .xwingAES256GCM], [false, true])
    func everyByteIsProtected(suite: EnvelopeSuite, signed: Bool) throws {
        let alice = try PrivateIdentity.generate()
        let bob = try PrivateIdentity.generate()
        let (aliceUser, bobUser) = (UUID(), UUID())
        let bytes = Array(
            try SealedEnvelope.seal(
                Array("every byte counts".utf8), from: alice, senderUserID: aliceUser, to: bob.publicIdentity,
                recipientUserID: bobUser, suite: suite, signed: signed
            ).serialized)
        for position in bytes.indices {
            var tampered = bytes
            tampered[position] ^= 0x01
            let opened = try? SealedEnvelope(serialized: tampered).open(
                as: bob, recipientUserID: bobUser, from: alice.publicIdentity)
            #expect(opened == nil, "flipping byte \(position) of \(bytes.count) went unnoticed")
        }
    }

    @Test func wrongKeyTypesAreRefused() throws {
        let identity = try PrivateIdentity.generate()
        // An X25519 key where a P-256 point is expected, and the reverse.
        #expect(throws: KeyFormatError.self) {
            try SeedKeyString.p256PublicKey(SeedKeyString.encode(identity.x25519Key.publicKey.rawRepresentation))
        }
        #expect(throws: KeyFormatError.self) {
            try PublicIdentity(pemRepresentation: identity.agreementKey.publicKey.pemRepresentation)
        }
        let keyFile = try IdentityKeyFile.seal(identity, passphrase: "pw", parameters: .testing)
        #expect(throws: KeyFormatError.self) { try PublicIdentity(serialized: keyFile) }
        #expect(throws: EnvelopeError.self) { try SealedEnvelope(serialized: keyFile) }
        #expect(throws: IdentityKeyFileError.notAKeyFile) {
            try IdentityKeyFile.open(identity.publicIdentity.serialized, passphrase: "pw")
        }
        #expect(throws: EnvelopeError.truncated) { try SealedEnvelope(serialized: [UInt8]()) }
    }
}
