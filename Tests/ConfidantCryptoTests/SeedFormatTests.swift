import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

/// Key strings and the conversation key computed with Python's `cryptography` from fixed scalars,
/// formatted the way the seed app's `exportPrivateKey`/`exportPublicKey` did.
enum SeedVectors {
    static let alicePrivate = "Hy49TFtqeYgBAgMEBQYHCAkKCwwNDg8QERITFBUWFxg%3D"
    static let alicePublic =
        "lFuvv%2BSbv%2F5cM9Sc0IPadc6AWq8fKoLPsBDgloFjWCpA9%2FaSoyUGniLMD%2BBMDmgyL0RZ5FEG1UMl7iO4xmvRhA%3D%3D"
    static let bobPrivate = "C63A%2F%2B4N3wDRI0VniQq83vASNFZ4mrze8BI0VniavN4%3D"
    static let bobPublic =
        "7Al3SzIN5mI4zSo0mvBsS%2BaQbQYlAQIr7aEMbA%2FpUyd%2BG%2FbGJEJuqnlVqDUW5II%2BnRNnHqP38tR7rrmgiZHPRg%3D%3D"
    static let conversationKey = "6wRB7UxXHt33Ks0fF+CK0KEscmfuFF50l6gRmYncGgM="
}

@Suite struct SeedFormatTests {
    @Test func readsSeedKeyStrings() throws {
        let alice = try SeedKeyString.p256PrivateKey(SeedVectors.alicePrivate)
        #expect(SeedKeyString.encode(alice.publicKey.rawRepresentation) == SeedVectors.alicePublic)
        #expect(SeedKeyString.encode(alice.rawRepresentation) == SeedVectors.alicePrivate)
        let bobPublic = try SeedKeyString.p256PublicKey(SeedVectors.bobPublic)
        #expect(SeedKeyString.encode(bobPublic.rawRepresentation) == SeedVectors.bobPublic)
    }

    @Test func conversationKeyMatchesIndependentImplementation() throws {
        let fromAlice = try SeedChat.keyString(
            privateKey: SeedVectors.alicePrivate, peerPublicKey: SeedVectors.bobPublic)
        let fromBob = try SeedChat.keyString(privateKey: SeedVectors.bobPrivate, peerPublicKey: SeedVectors.alicePublic)
        #expect(fromAlice == SeedVectors.conversationKey)
        #expect(fromBob == SeedVectors.conversationKey)
    }

    @Test func seedChatRoundTrip() throws {
        let ciphertext = try SeedChat.crypt(Array("Привет мир!".utf8), keyString: SeedVectors.conversationKey)
        #expect(ciphertext != Array("Привет мир!".utf8))
        let plaintext = try SeedChat.crypt(ciphertext, keyString: SeedVectors.conversationKey)
        #expect(String(decoding: plaintext, as: UTF8.self) == "Привет мир!")
    }

    @Test func acceptsUnescapedBase64() throws {
        let plain = try #require(SeedVectors.alicePublic.removingPercentEncoding)
        let key = try SeedKeyString.p256PublicKey(plain)
        #expect(SeedKeyString.encode(key.rawRepresentation) == SeedVectors.alicePublic)
    }

    @Test func rejectsMalformedStrings() {
        #expect(throws: KeyFormatError.invalidPercentEncoding) { try SeedKeyString.decode("abc%2") }
        #expect(throws: KeyFormatError.invalidPercentEncoding) { try SeedKeyString.decode("abc%zz") }
        #expect(throws: KeyFormatError.invalidBase64) { try SeedKeyString.decode("not*base64") }
        #expect(throws: KeyFormatError.wrongLength(expected: 64, actual: 3)) { try SeedKeyString.p256PublicKey("AAAA") }
        #expect(throws: KeyFormatError.wrongLength(expected: 32, actual: 3)) {
            try SeedKeyString.p256PrivateKey("AAAA")
        }
        let offCurve = SeedKeyString.encode([UInt8](repeating: 0xFF, count: 64))
        #expect(throws: KeyFormatError.invalidPoint) { try SeedKeyString.p256PublicKey(offCurve) }
        let zeroScalar = SeedKeyString.encode([UInt8](repeating: 0, count: 32))
        #expect(throws: KeyFormatError.invalidScalar) { try SeedKeyString.p256PrivateKey(zeroScalar) }
    }

    @Test func errorsExplainThemselves() {
        #expect(KeyFormatError.wrongLength(expected: 64, actual: 3).description == "the key has 3 bytes, expected 64")
        #expect(KeyFormatError.invalidPoint.description.contains("not a point on the curve"))
    }
}
