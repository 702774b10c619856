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

extension Vault {
    /// Backs the vault up, incrementally: only objects the target lacks travel; the catalogue and
    /// the manifest are written last, so an interrupted backup leaves the previous one intact and
    /// the next run resumes where this one stopped.
    /// - Throws: after trying every object, ``VaultError/io(_:)`` listing what did not upload; the
    ///   vault itself is never modified by a backup.
    @discardableResult
    public func backup(to target: any BackupTarget, progress: (String) -> Void = { _ in }) async throws -> BackupReport
    {
        var report = BackupReport()
        let (chapters, items, media) = try await database.read { db in
            (try ChapterRecord.fetchAll(db), try ItemRecord.fetchAll(db), try MediaRecord.fetchAll(db))
        }
        let hashes = Array(Set(media.map(\.objectHash))).sorted()
        for (index, hash) in hashes.enumerated() {
            let name = "objects/\(hash)"
            progress("object \(index + 1)/\(hashes.count)")
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
        // The catalogue, encrypted whole so the target learns nothing of the journal's shape.
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        let catalog = try encoder.encode(BackupCatalog(chapters: chapters, items: items, media: media))
        // A nonce derived from the content (SIV-style): an unchanged catalogue encrypts to the same
        // object, so it is not uploaded again; equal nonces only ever come with equal plaintexts.
        let nonce = try AES.GCM.Nonce(
            data: Array(
                HMAC<SHA256>.authenticationCode(for: catalog, using: key.derived("backup catalog nonce")).prefix(12)))
        guard let sealed = try AES.GCM.seal(catalog, using: key.derived("backup catalog"), nonce: nonce).combined else {
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
        let manifest = try BackupManifest(
            createdAt: Date(), wrappedKey: wrappedKey(), catalogHash: catalogHash, objectHashes: hashes
        ).authenticated(with: key)
        let manifestData = try manifest.canonical()
        try await target.write(manifestData, as: "manifest")
        report.bytesTransferred += manifestData.count
        return report
    }

    /// Restores a backup into `directory`, which must hold no vault yet. The passphrase is checked
    /// against the backup before anything is written. Objects are verified by hash as they arrive;
    /// an interrupted restore resumes, skipping objects already present and correct.
    public static func restore(
        from target: any BackupTarget, into directory: URL, passphrase: String, progress: (String) -> Void = { _ in }
    ) async throws -> (vault: Vault, report: BackupReport) {
        let manifest = try BackupManifest.decode(try await target.read("manifest"))
        guard manifest.version == 1 else {
            throw VaultError.corrupted("backup manifest version \(manifest.version) is unknown")
        }
        let key = try VaultKey.unwrap(manifest.wrappedKey, passphrase: passphrase)
        try manifest.verify(with: key)
        let sealedCatalog = try await target.read("catalogs/\(manifest.catalogHash)")
        guard SHA256.hash(data: sealedCatalog).hexString == manifest.catalogHash else {
            throw VaultError.corrupted("the backup catalogue does not match its hash")
        }
        let catalog: BackupCatalog
        do {
            let plain = try AES.GCM.open(
                try AES.GCM.SealedBox(combined: sealedCatalog), using: key.derived("backup catalog"))
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
            progress("object \(index + 1)/\(manifest.objectHashes.count)")
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
}
