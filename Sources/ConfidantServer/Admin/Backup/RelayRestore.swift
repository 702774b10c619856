import ConfidantCrypto
import Foundation

/// Puts a relay backup (`RelayBackup`) where a new relay will find it: the database file at the
/// configuration's SQLite path, the blobs in its data directory, the sign-in key at its key file.
/// Every file is checked against the manifest as it is copied; nothing that exists is overwritten,
/// and a restore that fails removes what it wrote.
public enum RelayRestore {
    /// Restores `backup` for a relay of `configuration` (which must not hold one yet); the
    /// relay's next start brings the schema up to date.
    public static func restore(
        from backup: URL, into configuration: ServerConfiguration,
        progress: (_ copied: Int, _ of: Int) -> Void = { _, _ in }
    ) throws -> RelayBackupManifest {
        typealias Names = RelayBackupManifest
        let manifest = try read(backup)
        guard manifest.format == Names.currentFormat else {
            throw RelayBackupError.unsupported(
                "its manifest has format \(manifest.format), this build reads \(Names.currentFormat)")
        }
        guard manifest.migrations <= RelayServer.migrations.count else {
            throw RelayBackupError.unsupported(
                "its database has \(manifest.migrations) schema migrations, this build knows \(RelayServer.migrations.count); restore it with the version that made it"
            )
        }
        guard case .sqlite(let path) = configuration.database else { throw RelayBackupError.postgres }
        let database = URL(fileURLWithPath: path)
        let blobs = BlobFiles.directory(in: configuration.dataDirectory)
        let authKey = configuration.resolvedAuthKeyFile
        for existing in [database.path, path + "-wal", authKey.path]
        where FileManager.default.fileExists(atPath: existing) {
            throw RelayBackupError.targetNotEmpty(existing)
        }
        if let inside = try? FileManager.default.contentsOfDirectory(atPath: blobs.path), !inside.isEmpty {
            throw RelayBackupError.targetNotEmpty(blobs.path)
        }
        var written: [URL] = []
        do {
            try DataDirectory.prepare(configuration.dataDirectory)
            try FileManager.default.createDirectory(
                at: database.deletingLastPathComponent(), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            try copy(
                backup.appendingPathComponent(Names.databaseFileName), to: database, expected: manifest.database,
                written: &written)
            try copy(
                backup.appendingPathComponent(Names.authKeyFileName), to: authKey, expected: manifest.authKey,
                written: &written)
            let source = backup.appendingPathComponent(Names.blobDirectoryName)
            for (index, blob) in manifest.blobs.enumerated() {
                let name = blob.id.canonicalString
                try copy(
                    source.appendingPathComponent(name), to: blobs.appendingPathComponent(name),
                    expected: .init(size: blob.size, sha256: blob.sha256), written: &written)
                progress(index + 1, manifest.blobs.count)
            }
            return manifest
        } catch {
            for file in written.reversed() { try? FileManager.default.removeItem(at: file) }
            if let error = error as? RelayBackupError { throw error }
            if let error = error as? DataDirectory.Unsafe { throw RelayBackupError.fileSystem(error.description) }
            throw RelayBackupError.fileSystem(error.localizedDescription)
        }
    }

    /// The manifest of the backup in `directory`.
    public static func read(_ directory: URL) throws -> RelayBackupManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        // Bounded: a manifest lists each blob in about 130 bytes.
        let file = directory.appendingPathComponent(RelayBackupManifest.fileName)
        guard let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int,
            size <= maximumManifestBytes, let data = FileManager.default.contents(atPath: file.path),
            let manifest = try? decoder.decode(RelayBackupManifest.self, from: data)
        else { throw RelayBackupError.notABackup(directory.path) }
        return manifest
    }

    /// The largest manifest read: about two million blobs.
    static let maximumManifestBytes = 256 << 20

    private static func copy(
        _ source: URL, to target: URL, expected: RelayBackupManifest.File, written: inout [URL]
    ) throws {
        let copied: HashedFileCopy.Copied
        do {
            copied = try HashedFileCopy.copy(source, to: target)
        } catch CocoaError.fileNoSuchFile {
            throw RelayBackupError.damaged("\(source.lastPathComponent) is missing")
        }
        written.append(target)
        guard copied.size == expected.size, copied.sha256 == expected.sha256 else {
            throw RelayBackupError.damaged("\(source.path) differs from the manifest")
        }
    }
}
