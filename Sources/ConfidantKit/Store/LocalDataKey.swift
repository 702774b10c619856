import ConfidantCrypto
import Crypto
import Foundation

/// The random 256-bit key that seals message bodies and contact data in the local store.
///
/// It is stored wrapped (AES-256-GCM) under a key derived with HKDF-SHA256 from the device's
/// private signing key, which lives only in the passphrase-protected key file: so the passphrase
/// protects the store without a second scrypt run, changing the passphrase rewrites only the key
/// file, and a new device key rewraps the data key without re-encrypting anything.
struct LocalDataKey: Sendable {
    static let wrappedCount = 16 + 12 + 32 + 16
    private static let wrapInfo = Data("Confidant local data key v1".utf8)
    private static let sealContext = Data("Confidant local store v1\0".utf8)

    let key: SymmetricKey
    /// Keyed hashes for lookups by e-mail, so the e-mail itself is stored only sealed.
    let lookupKey: SymmetricKey
    /// Keyed hashes of the words of messages, for the search index (``SearchTerms``).
    let searchKey: SymmetricKey

    init(key: SymmetricKey) {
        self.key = key
        lookupKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: key, info: Data("Confidant local lookup v1".utf8), outputByteCount: 32)
        searchKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: key, info: Data("Confidant local search v1".utf8), outputByteCount: 32)
    }

    static func generate() -> LocalDataKey { LocalDataKey(key: SymmetricKey(size: .bits256)) }

    private static func wrappingKey(_ identity: PrivateIdentity, salt: Data) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: identity.signingKey.rawRepresentation),
            salt: salt, info: wrapInfo, outputByteCount: 32)
    }

    /// salt (16) | nonce (12) | wrapped key (32) | tag (16)
    func wrapped(for identity: PrivateIdentity) throws -> Data {
        let salt = Data((0..<16).map { _ in UInt8.random(in: .min ... .max) })
        let box = try AES.GCM.seal(key.withUnsafeBytes { Data($0) }, using: Self.wrappingKey(identity, salt: salt))
        return salt + Data(box.nonce) + box.ciphertext + box.tag
    }

    static func unwrap(_ data: Data, with identity: PrivateIdentity) throws -> LocalDataKey {
        let bytes = [UInt8](data)
        guard bytes.count == wrappedCount else {
            throw ConfidantKitError.storeDamaged("the wrapped data key has \(bytes.count) bytes")
        }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: bytes[16..<28]), ciphertext: bytes[28..<60], tag: bytes[60..<76])
            let key = try AES.GCM.open(box, using: wrappingKey(identity, salt: Data(bytes[0..<16])))
            return LocalDataKey(key: SymmetricKey(data: key))
        } catch {
            throw ConfidantKitError.storeDamaged(
                "the data key does not open with this device's key (was the key file replaced?)")
        }
    }

    /// nonce (12) | ciphertext | tag (16); `context` (table, column, row) is the associated data,
    /// so a sealed value cannot be moved to another row or column unnoticed.
    func seal(_ plaintext: Data, context: String) throws -> Data {
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: Self.sealContext + Data(context.utf8))
        guard let combined = box.combined else { throw ConfidantKitError.storeDamaged("AES-GCM gave no combined form") }
        return combined
    }

    func open(_ sealed: Data, context: String) throws -> Data {
        do {
            return try AES.GCM.open(
                AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Self.sealContext + Data(context.utf8))
        } catch {
            throw ConfidantKitError.storeDamaged(
                "a sealed value (\(context.split(separator: "|").first ?? "")) fails authentication")
        }
    }

    func lookup(_ text: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: lookupKey))
    }

    /// The index's token for one search key (a folded word or prefix): the first 4 bytes of
    /// HMAC-SHA256(search key, UTF-8), big-endian, as a signed 32-bit integer (4 bytes in SQLite).
    /// Two keys may share a token: the index finds candidates, and each is checked against its
    /// opened text (``SearchTerms/matches(_:in:)``), so a shared token costs a check, not a wrong result.
    func searchToken(_ key: String) -> Int64 {
        let code = HMAC<SHA256>.authenticationCode(for: Data(key.utf8), using: searchKey)
        let prefix = code.withUnsafeBytes { bytes in bytes.prefix(4).reduce(UInt32(0)) { ($0 << 8) | UInt32($1) } }
        return Int64(Int32(bitPattern: prefix))
    }
}
