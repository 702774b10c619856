import Crypto
import Foundation

/// The chat encryption of seed 000, exactly: the suite `seed-legacy`.
///
/// ```
/// key string  = base64(HKDF-SHA256(ECDH-P256(my private, peer public), salt "salt for key", info "", 32 bytes))
/// cipher key  = UTF-8 bytes of the key string
/// ciphertext  = S-block(plaintext)
/// ```
/// - Warning: No integrity and the same keystream for every message between two users.
///   Exists so that Confidant can read and write what the seed app stored, and for `CipherLab`.
public enum SeedChat {
    /// The HKDF salt the seed app used.
    public static let salt = Data("salt for key".utf8)

    /// The conversation key string, identical on both sides of a conversation.
    public static func keyString(
        privateKey: P256.KeyAgreement.PrivateKey, peerPublicKey: P256.KeyAgreement.PublicKey
    ) throws -> String {
        let secret = try privateKey.sharedSecretFromKeyAgreement(with: peerPublicKey)
        let key = secret.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: salt, sharedInfo: Data(), outputByteCount: 32)
        return key.withUnsafeBytes { Data($0) }.base64EncodedString()
    }

    /// The conversation key string from two seed-format key strings (as the seed's `deriveSymmetricKey`).
    public static func keyString(privateKey: String, peerPublicKey: String) throws -> String {
        try keyString(
            privateKey: SeedKeyString.p256PrivateKey(privateKey),
            peerPublicKey: SeedKeyString.p256PublicKey(peerPublicKey))
    }

    /// Encrypts or decrypts one message body with the conversation key string.
    public static func crypt<Bytes: Sequence>(_ body: Bytes, keyString: String) throws -> [UInt8]
    where Bytes.Element == UInt8 {
        try SBlockCipher.process(body, key: Array(keyString.utf8))
    }
}
