import ConfidantCrypto
import Crypto
import Foundation
import GRDB

/// What a backup or restore did.
public struct BackupReport: Sendable {
    /// Objects sent this time.
    public var objectsTransferred = 0
    /// Bytes sent this time.
    public var bytesTransferred = 0
    /// Objects the target already had.
    public var objectsSkipped = 0
    /// Objects that could not be sent, with the reason.
    public var failed: [String] = []
}

/// How far a backup or restore is: objects are counted as they are taken up.
public struct BackupProgress: Sendable, Equatable, CustomStringConvertible {
    /// Objects taken up so far, this one included (1-based).
    public let object: Int
    /// Objects in all.
    public let objects: Int

    /// Progress at object `object` of `objects`.
    public init(object: Int, objects: Int) {
        self.object = object
        self.objects = objects
    }

    /// The share done before this object, 0...1.
    public var fraction: Double { objects == 0 ? 1 : Double(object - 1) / Double(objects) }

    public var description: String { "object \(object)/\(objects)" }
}

extension Vault {
    /// Where the manifests of vaults' backups are, one per vault.
    static let manifestDirectory = "manifests/"
    /// The single manifest name of backups made before manifests were named per vault.
    static let legacyManifestName = "manifest"
    /// The backup id that names that single older manifest in `restore`.
    public static let legacyBackupID = "legacy"

    /// The name this vault's backups have on a target (32 hex digits): derived from the vault
    /// key, so that two vaults never share one, a vault restored from a backup goes on under the
    /// same name, and the name says nothing about the vault to the target.
    public var backupID: String {
        Data(HMAC<SHA256>.authenticationCode(for: Data("backup id".utf8), using: key.derived("backup id")))
            .prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// Backs the vault up, incrementally: only objects the target lacks travel; the catalogue and
    /// the manifest are written last, so an interrupted backup leaves the previous one intact and
    /// the next run resumes where this one stopped. The manifest goes under this vault's own name
    /// (`manifests/<backupID>`), so several vaults can back up to one target.
    /// - Throws: ``VaultError/backupBelongsToAnotherVault(target:)`` when a manifest this vault
    ///   did not write is under its name (it is never replaced); after trying every object,
    ///   ``VaultError/io(_:)`` listing what did not upload. The vault itself is never modified.
    @discardableResult
    public func backup(to target: any BackupTarget, progress: (BackupProgress) -> Void = { _ in }) async throws
        -> BackupReport
    {
        var report = BackupReport()
        let manifestName = Self.manifestDirectory + backupID
        // Refuse before sending anything: what is under this vault's name must be its own.
        if try await target.exists(manifestName) {
            let existing = try? BackupManifest.decode(try await target.read(manifestName))
            guard let existing, (try? existing.verify(with: key)) != nil, existing.backupID == backupID else {
                throw VaultError.backupBelongsToAnotherVault(target: target.description)
            }
        }
        let (chapters, items, media) = try await database.read { db in
            (try ChapterRecord.fetchAll(db), try ItemRecord.fetchAll(db), try MediaRecord.fetchAll(db))
        }
        let hashes = Array(Set(media.map(\.objectHash))).sorted()
        for (index, hash) in hashes.enumerated() {
            let name = "objects/\(hash)"
            progress(BackupProgress(object: index + 1, objects: hashes.count))
            do {
                if try await target.exists(name) {
                    report.objectsSkipped += 1
                    continue
                }
                let url = objectURL(hash)
                try await target.upload(url, as: name)
                report.objectsTransferred += 1
                report.bytesTransferred +=
                    (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
            } catch {
                report.failed.append("\(hash.prefix(12))… (\(error))")
            }
        }
        guard report.failed.isEmpty else {
            throw VaultError.io(
                "backup incomplete, the previous backup is still the current one; not uploaded: "
                    + report.failed.joined(separator: "; "))
        }
        // The catalogue, encrypted whole so the target learns nothing of the journal's shape, and
        // bound to this backup (associated data: the manifest version and backup id).
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let catalog = try encoder.encode(BackupCatalog(chapters: chapters, items: items, media: media))
        let manifest = BackupManifest(
            createdAt: Date(), wrappedKey: try wrappedKey(), catalogHash: "", objectHashes: hashes, backupID: backupID)
        // A nonce derived from the content (SIV-style): an unchanged catalogue encrypts to the same
        // object, so it is not uploaded again; equal nonces only ever come with equal plaintexts.
        let nonce = try AES.GCM.Nonce(
            data: Array(
                HMAC<SHA256>.authenticationCode(for: catalog, using: key.derived("backup catalog nonce")).prefix(12)))
        guard
            let sealed = try AES.GCM.seal(
                catalog, using: key.derived("backup catalog"), nonce: nonce,
                authenticating: manifest.catalogAssociatedData
            ).combined
        else {
            throw VaultError.corrupted("could not seal the catalogue")
        }
        let catalogHash = SHA256.hash(data: sealed).hexString
        if try await !target.exists("catalogs/\(catalogHash)") {
            try await target.write(sealed, as: "catalogs/\(catalogHash)")
            report.objectsTransferred += 1
            report.bytesTransferred += sealed.count
        } else {
            report.objectsSkipped += 1
        }
        var finished = manifest
        finished.catalogHash = catalogHash
        let manifestData = try finished.encoded(with: key)
        try await target.write(manifestData, as: manifestName)
        report.bytesTransferred += manifestData.count
        return report
    }

    /// Restores a backup into `directory`, which must hold no vault yet. Without `backupID` the
    /// backup is the one on the target that the passphrase opens (an error names the ids when
    /// several do). The passphrase is checked against the backup before anything is written.
    /// Objects are verified by hash as they arrive; an interrupted restore resumes, skipping
    /// objects already present and correct.
    public static func restore(
        from target: any BackupTarget, into directory: URL, passphrase: String, backupID: String? = nil,
        progress: (BackupProgress) -> Void = { _ in }
    ) async throws -> (vault: Vault, report: BackupReport) {
        let (manifest, key) = try await findManifest(on: target, passphrase: passphrase, backupID: backupID)
        let sealedCatalog = try await target.read("catalogs/\(manifest.catalogHash)")
        guard SHA256.hash(data: sealedCatalog).hexString == manifest.catalogHash else {
            throw VaultError.corrupted("the backup catalogue does not match its hash")
        }
        let catalog: BackupCatalog
        do {
            let plain = try AES.GCM.open(
                try AES.GCM.SealedBox(combined: sealedCatalog), using: key.derived("backup catalog"),
                authenticating: manifest.catalogAssociatedData)
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            catalog = try decoder.decode(BackupCatalog.self, from: plain)
        } catch {
            throw VaultError.corrupted("the backup catalogue does not decrypt")
        }
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent(databaseName).path) {
            throw VaultError.alreadyInitialized(path: directory.path)
        }
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent(objectsName), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        var report = BackupReport()
        let staging = Vault.unopened(directory: directory)
        let objectIDs = Dictionary(
            catalog.media.map { ($0.objectHash, $0.id) }, uniquingKeysWith: { first, _ in first })
        for (index, hash) in manifest.objectHashes.enumerated() {
            progress(BackupProgress(object: index + 1, objects: manifest.objectHashes.count))
            let destination = staging.objectURL(hash)
            if FileManager.default.fileExists(atPath: destination.path),
                objectIsIntact(at: destination, hash: hash, key: key, objectID: objectIDs[hash])
            {
                report.objectsSkipped += 1
                continue
            }
            try FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            let partial = destination.appendingPathExtension("partial")
            try await target.download("objects/\(hash)", to: partial)
            guard objectIsIntact(at: partial, hash: hash, key: key, objectID: objectIDs[hash]) else {
                try? FileManager.default.removeItem(at: partial)
                report.failed.append(hash)
                continue
            }
            if FileManager.default.fileExists(atPath: destination.path) {
                try FileManager.default.removeItem(at: destination)
            }
            try FileManager.default.moveItem(at: partial, to: destination)
            report.objectsTransferred += 1
            report.bytesTransferred +=
                (try? FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? Int) ?? 0
        }
        guard report.failed.isEmpty else {
            throw VaultError.corrupted(
                "\(report.failed.count) backup object(s) are damaged in \(target.description); run restore again after repairing the backup"
            )
        }
        // The database comes last: a vault exists only when every object is in place.
        let databaseURL = directory.appendingPathComponent(databaseName)
        let temporary = directory.appendingPathComponent(databaseName + ".restoring")
        try? FileManager.default.removeItem(at: temporary)
        let database = try DatabaseQueue(path: temporary.path)
        try VaultSchema.migrator.migrate(database)
        try await database.write { db in
            try MetaRecord(wrappedKey: manifest.wrappedKey, createdAt: Date()).insert(db)
            for record in catalog.chapters { try record.insert(db) }
            for record in catalog.items { try record.insert(db) }
            for record in catalog.media { try record.insert(db) }
        }
        try database.close()
        try FileManager.default.moveItem(at: temporary, to: databaseURL)
        return (try Vault.open(at: directory, passphrase: passphrase), report)
    }

    /// The manifest on `target` that `passphrase` opens and that authenticates under the key it
    /// unwraps: the one named `backupID`, or the only one among all the target's manifests.
    private static func findManifest(on target: any BackupTarget, passphrase: String, backupID: String?)
        async throws -> (BackupManifest, VaultKey)
    {
        var names: [String]
        if let backupID {
            names = [backupID == legacyBackupID ? legacyManifestName : manifestDirectory + backupID]
        } else {
            names = try await target.list(prefix: manifestDirectory)
            if try await target.exists(legacyManifestName) { names.append(legacyManifestName) }
        }
        guard !names.isEmpty else { throw VaultError.notFound("a backup in \(target.description)") }
        var opened: [(name: String, manifest: BackupManifest, key: VaultKey)] = []
        var lastError: any Error = VaultError.wrongPassphrase
        for name in names {
            do {
                let manifest = try BackupManifest.decode(try await target.read(name))
                let key = try VaultKey.unwrap(manifest.wrappedKey, passphrase: passphrase)
                try manifest.verify(with: key)
                // A manifest moved under another vault's name is not that vault's backup.
                if name != legacyManifestName, manifest.backupID != String(name.dropFirst(manifestDirectory.count)) {
                    throw VaultError.corrupted("the backup manifest \(name) names another backup")
                }
                opened.append((name, manifest, key))
            } catch {
                // With one name asked for, its own error; otherwise the passphrase opens another.
                if backupID != nil { throw error }
                lastError = error
            }
        }
        switch opened.count {
        case 0: throw lastError
        case 1: return (opened[0].manifest, opened[0].key)
        default:
            throw VaultError.ambiguousBackup(
                ids: opened.map {
                    $0.name == legacyManifestName ? legacyBackupID : String($0.name.dropFirst(manifestDirectory.count))
                })
        }
    }
}
