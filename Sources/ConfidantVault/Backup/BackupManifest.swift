import Crypto
import Foundation

/// The root of a backup: which catalogue and objects make it up, with the wrapped vault key so
/// that a passphrase alone restores it. Authenticated with HMAC-SHA256 under a key derived from
/// the vault key (checked after the passphrase unwraps it); the target cannot alter or swap it.
///
/// Version 2, written since 2026-11-24 (docs/PROTOCOL.md §6): the MAC covers the exact bytes of
/// the manifest's body, carried as they are, so any JSON encoder can write and read one:
/// ```
/// {"version": 2, "manifest": base64(body), "mac": base64(HMAC-SHA256(K_manifest, "Confidant backup manifest v2\0" ‖ body))}
/// body = UTF-8 JSON {"createdAt": ms, "wrappedKey": base64, "catalogHash": hex, "objectHashes": [hex], "backupID": hex}
/// ```
/// Version 1 manifests (the MAC over Foundation's re-encoding of the JSON) are still read.
struct BackupManifest: Sendable {
    /// The version written.
    static let currentVersion = 2
    static let macDomain = Data("Confidant backup manifest v2\0".utf8)

    /// 1 or 2, as read; new manifests are 2.
    var version = currentVersion
    var createdAt: Date
    var wrappedKey: Data
    var catalogHash: String
    var objectHashes: [String]
    /// The vault's backup id (`Vault.backupID`), so a manifest names the vault it belongs to;
    /// nil in manifests written before backups were named per vault (as `manifest`).
    var backupID: String?
    /// Version 2: the body's bytes as stored (what the MAC covers).
    private var body: Data?
    private var mac: Data?

    init(
        createdAt: Date, wrappedKey: Data, catalogHash: String, objectHashes: [String], backupID: String?
    ) {
        self.createdAt = createdAt
        self.wrappedKey = wrappedKey
        self.catalogHash = catalogHash
        self.objectHashes = objectHashes
        self.backupID = backupID
    }

    /// The body (version 2), the JSON object the MAC covers byte for byte.
    private struct Body: Codable {
        var createdAt: Int64
        var wrappedKey: Data
        var catalogHash: String
        var objectHashes: [String]
        var backupID: String?
    }

    /// The stored form (version 2).
    private struct Envelope: Codable {
        var version: Int
        var manifest: Data
        var mac: Data
    }

    /// The manifest's bytes for the target: version 2, authenticated under `key`.
    func encoded(with key: VaultKey) throws -> Data {
        let body = try Self.encoder.encode(
            Body(
                createdAt: Int64((createdAt.timeIntervalSince1970 * 1000).rounded()), wrappedKey: wrappedKey,
                catalogHash: catalogHash, objectHashes: objectHashes, backupID: backupID))
        let mac = Data(HMAC<SHA256>.authenticationCode(for: Self.macDomain + body, using: Self.macKey(key)))
        return try Self.encoder.encode(Envelope(version: 2, manifest: body, mac: mac))
    }

    /// Checks the MAC under the key the wrapped key unwrapped to.
    func verify(with key: VaultKey) throws {
        guard let mac else { throw VaultError.corrupted("the backup manifest is not authenticated") }
        let covered: Data
        if version == 2 {
            guard let body else { throw VaultError.corrupted("the backup manifest has no body") }
            covered = Self.macDomain + body
        } else {
            covered = try LegacyManifest(self).canonical()
        }
        guard HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: covered, using: Self.macKey(key)) else {
            throw VaultError.corrupted("the backup manifest was altered (its authentication code does not match)")
        }
    }

    private static func macKey(_ key: VaultKey) -> SymmetricKey { key.derived("backup manifest") }

    /// Reads a stored manifest, version 1 or 2 (not yet authenticated: `verify` that).
    static func decode(_ data: Data) throws -> BackupManifest {
        struct Probe: Decodable { var version: Int }
        guard let probe = try? JSONDecoder().decode(Probe.self, from: data) else {
            throw VaultError.corrupted("the backup manifest is unreadable")
        }
        switch probe.version {
        case 1:
            return try LegacyManifest.decode(data)
        case 2:
            do {
                let envelope = try JSONDecoder().decode(Envelope.self, from: data)
                let body = try JSONDecoder().decode(Body.self, from: envelope.manifest)
                var manifest = BackupManifest(
                    createdAt: Date(timeIntervalSince1970: Double(body.createdAt) / 1000), wrappedKey: body.wrappedKey,
                    catalogHash: body.catalogHash, objectHashes: body.objectHashes, backupID: body.backupID)
                manifest.body = envelope.manifest
                manifest.mac = envelope.mac
                return manifest
            } catch {
                throw VaultError.corrupted("the backup manifest is unreadable (\(error))")
            }
        default:
            throw VaultError.corrupted(
                "backup manifest version \(probe.version) is newer than this Confidant, which reads versions 1 and 2")
        }
    }

    /// The associated data the catalogue is sealed with: version 2 binds it to its backup.
    var catalogAssociatedData: Data {
        version == 1 ? Data() : Data("Confidant backup catalogue v2\0".utf8) + Data((backupID ?? "").utf8)
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// Version 1: the MAC covers Foundation's re-encoding with sorted keys and no `mac` (which
    /// writes `/` as `\/`, so only Foundation reproduces it); read for backups made before 2.
    private struct LegacyManifest: Codable {
        var version = 1
        var createdAt: Date
        var wrappedKey: Data
        var catalogHash: String
        var objectHashes: [String]
        var backupID: String?
        var mac: Data?

        init(_ manifest: BackupManifest) {
            createdAt = manifest.createdAt
            wrappedKey = manifest.wrappedKey
            catalogHash = manifest.catalogHash
            objectHashes = manifest.objectHashes
            backupID = manifest.backupID
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
            guard let legacy = try? decoder.decode(LegacyManifest.self, from: data) else {
                throw VaultError.corrupted("the backup manifest is unreadable")
            }
            var manifest = BackupManifest(
                createdAt: legacy.createdAt, wrappedKey: legacy.wrappedKey, catalogHash: legacy.catalogHash,
                objectHashes: legacy.objectHashes, backupID: legacy.backupID)
            manifest.version = 1
            manifest.mac = legacy.mac
            return manifest
        }

        /// A version 1 manifest, for tests that check old backups still restore.
        static func authenticated(_ manifest: BackupManifest, with key: VaultKey) throws -> Data {
            var legacy = LegacyManifest(manifest)
            legacy.mac = Data(
                HMAC<SHA256>.authenticationCode(for: try legacy.canonical(), using: key.derived("backup manifest")))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .millisecondsSince1970
            return try encoder.encode(legacy)
        }
    }

    /// A version 1 manifest's bytes, as backups before 2026-11-24 wrote them (tests).
    func legacyEncoded(with key: VaultKey) throws -> Data { try LegacyManifest.authenticated(self, with: key) }
}

/// The catalogue: every database row (secret fields already sealed), encrypted as a whole.
struct BackupCatalog: Codable {
    var chapters: [ChapterRecord]
    var items: [ItemRecord]
    var media: [MediaRecord]
}
