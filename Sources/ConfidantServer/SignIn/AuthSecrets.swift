import ConfidantCrypto
import Crypto
import Foundation

/// Encrypts sign-in secrets at rest (an account's arithmetic mapping and TOTP secret) with the
/// server's key, AES-256-GCM with the account and field as associated data, so a copy of the
/// database alone does not reveal them and a value cannot be moved to another account.
struct AuthSecrets: Sendable {
    private let key: SymmetricKey

    /// What a sealed value is, bound into its associated data.
    enum Field {
        static let arithmeticMapping = "arithmetic-mapping"
        static let totpSecret = "totp-secret"
    }

    /// Reads the key file, or creates it (32 random bytes, mode 0600) when missing.
    static func load(from url: URL) throws -> AuthSecrets {
        if let data = try? Data(contentsOf: url) {
            guard data.count == 32 else {
                throw APIFailure(.`internal`, "The auth key file \(url.path) must hold exactly 32 bytes.")
            }
            return AuthSecrets(key: SymmetricKey(data: data))
        }
        let key = SymmetricKey(size: .bits256)
        let bytes = key.withUnsafeBytes { Data($0) }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: url.path, contents: bytes, attributes: [.posixPermissions: 0o600])
        else {
            throw APIFailure(.`internal`, "Cannot create the auth key file \(url.path).")
        }
        return AuthSecrets(key: key)
    }

    private static func context(_ user: UUID, _ field: String) -> Data {
        Data("Confidant auth secret v1\0\(user.canonicalString)\0\(field)".utf8)
    }

    /// What is stored of an e-mail code: HMAC-SHA256 under a key derived from the server's auth
    /// key, bound to the transaction, so a copy of the database alone cannot recover the code
    /// (6 characters from 25 symbols: an unkeyed hash is reversed in a moment).
    func codeDigest(_ code: String, transaction tokenHash: Data) -> Data {
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: self.key, info: Data("Confidant e-mail code v1".utf8), outputByteCount: 32)
        var message = tokenHash
        message.append(contentsOf: code.uppercased().utf8)
        return Data(HMAC<SHA256>.authenticationCode(for: message, using: key))
    }

    func seal(_ plaintext: Data, user: UUID, field: String) throws -> Data {
        guard let combined = try AES.GCM.seal(plaintext, using: key, authenticating: Self.context(user, field)).combined
        else {
            throw APIFailure(.`internal`, "Could not seal a sign-in secret.")
        }
        return combined
    }

    func open(_ sealed: Data, user: UUID, field: String) throws -> Data {
        do {
            return try AES.GCM.open(
                AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Self.context(user, field))
        } catch {
            throw APIFailure(
                .authKeyMismatch,
                "A stored sign-in secret does not open with this server's auth key (is --auth-key-file the same on every instance?)."
            )
        }
    }
}
