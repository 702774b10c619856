import Crypto
import Foundation

/// The root of a backup: which catalogue and objects make it up, with the wrapped vault key so
/// that a passphrase alone restores it. Authenticated with HMAC-SHA256 under a key derived from
/// the vault key (checked after the passphrase unwraps it); the target cannot alter or swap it.
struct BackupManifest: Codable {
    var version = 1
    var createdAt: Date
    var wrappedKey: Data
    var catalogHash: String
    var objectHashes: [String]
    /// The vault's backup id (`Vault.backupID`), so a manifest names the vault it belongs to;
    /// nil in manifests written before backups were named per vault (as `manifest`).
    var backupID: String?
    var mac: Data?

    func authenticated(with key: VaultKey) throws -> BackupManifest {
        var copy = self
        copy.mac = nil
        copy.mac = Data(
            HMAC<SHA256>.authenticationCode(for: try copy.canonical(), using: key.derived("backup manifest")))
        return copy
    }

    func verify(with key: VaultKey) throws {
        guard let mac else { throw VaultError.corrupted("the backup manifest is not authenticated") }
        var copy = self
        copy.mac = nil
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                mac, authenticating: try copy.canonical(), using: key.derived("backup manifest"))
        else {
            throw VaultError.corrupted("the backup manifest was altered (its authentication code does not match)")
        }
    }

    func canonical() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return try encoder.encode(self)
    }

    static func decode(_ data: Data) throws -> BackupManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do { return try decoder.decode(BackupManifest.self, from: data) } catch {
            throw VaultError.corrupted("the backup manifest is unreadable")
        }
    }
}

/// The catalogue: every database row (secret fields already sealed), encrypted as a whole.
struct BackupCatalog: Codable {
    var chapters: [ChapterRecord]
    var items: [ItemRecord]
    var media: [MediaRecord]
}
