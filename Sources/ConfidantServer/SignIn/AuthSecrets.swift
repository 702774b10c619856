import ConfidantCrypto
import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// Reads the key file, or creates it (32 random bytes, mode 0600 from the first byte) when
    /// nothing is at its path. A key file that is there but cannot be read, or is not 32 bytes,
    /// stops the server: a new key would make every stored TOTP secret and mapping unreadable.
    static func load(from url: URL) throws -> AuthSecrets {
        var status = stat()
        guard lstat(url.path, &status) != 0 else {
            let data: Data
            do {
                data = try Data(contentsOf: url)
            } catch {
                throw AuthKeyFileError.unreadable(path: url.path, reason: (error as NSError).localizedDescription)
            }
            guard data.count == 32 else { throw AuthKeyFileError.wrongSize(path: url.path, bytes: data.count) }
            return AuthSecrets(key: SymmetricKey(data: data))
        }
        let key = SymmetricKey(size: .bits256)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        do {
            try PrivateFile.write(key.withUnsafeBytes { Data($0) }, to: url, overwrite: false)
        } catch PrivateFileError.exists {
            // Another instance created it at the same moment: use that one.
            return try load(from: url)
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
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: self.key, info: Data("Confidant e-mail code v1".utf8), outputByteCount: 32)
        var message = tokenHash
        message.append(contentsOf: code.uppercased().utf8)
        return Data(HMAC<SHA256>.authenticationCode(for: message, using: key))
    }

    /// The 16-byte tag that makes a device challenge the server's own (see `DeviceChallenges`):
    /// HMAC-SHA256 under a key derived from the auth key, so every instance sharing the key
    /// accepts the challenges of the others.
    func deviceChallengeTag(_ bytes: some DataProtocol) -> Data {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: self.key, info: Data("Confidant device challenge v1".utf8), outputByteCount: 32)
        return Data(HMAC<SHA256>.authenticationCode(for: Data(bytes), using: key).prefix(16))
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

/// Why the server's auth key file cannot be used; the server does not start.
public enum AuthKeyFileError: Error, CustomStringConvertible, Equatable {
    case unreadable(path: String, reason: String)
    case wrongSize(path: String, bytes: Int)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "cannot read the auth key file \(path) (\(reason)); it is not replaced, since a new key would make every stored TOTP secret and arithmetic mapping unreadable"
        case .wrongSize(let path, let bytes):
            "the auth key file \(path) holds \(bytes) bytes, not 32; restore it from a backup (a new key would make every stored TOTP secret and arithmetic mapping unreadable)"
        }
    }
}
