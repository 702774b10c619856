import ConfidantCrypto
import Foundation
import SQLKit
import SQLiteNIO

/// A consistent copy of a running relay on SQLite: the database as one snapshot (`VACUUM INTO`,
/// which reads inside one transaction while the relay keeps writing), then the blob files that
/// snapshot refers to and the key that encrypts sign-in secrets, then the manifest.
///
/// A blob's file is written before its row and removed after it, so every row in the snapshot
/// had its file when the snapshot was taken; one gone by the time it is copied was removed since,
/// and its rows are removed from the copy too.
struct RelayBackup {
    let services: RelayServices

    private var configuration: ServerConfiguration { services.configuration }

    func write(to directory: URL, progress: @Sendable (_ copied: Int, _ of: Int) -> Void) async throws
        -> RelayBackupManifest
    {
        guard case .sqlite = configuration.database else { throw RelayBackupError.postgres }
        try Self.prepare(directory)
        do {
            return try await fill(directory, progress: progress)
        } catch {
            // A backup that failed leaves nothing that could pass for one.
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private func fill(_ directory: URL, progress: @Sendable (Int, Int) -> Void) async throws -> RelayBackupManifest {
        typealias Names = RelayBackupManifest
        let copy = directory.appendingPathComponent(Names.databaseFileName)
        try await services.database.sql.raw("VACUUM INTO \(bind: copy.path)").run()
        let snapshot = try await SQLiteConnection.open(storage: .file(path: copy.path))
        let blobs: [RelayBackupManifest.Blob]
        let gone: [UUID]
        let migrations: Int
        do {
            let rows = try await Self.blobRows(on: snapshot)
            let source = BlobFiles.directory(in: configuration.dataDirectory)
            let target = directory.appendingPathComponent(Names.blobDirectoryName)
            (blobs, gone) = try Self.copy(rows, from: source, to: target, progress: progress)
            for id in gone { try await Self.removeBlob(id, on: snapshot) }
            migrations = try await Self.migrationCount(on: snapshot)
            try await snapshot.close()
        } catch {
            try? await snapshot.close()
            throw error
        }
        let authKey = try Self.copyFile(
            configuration.resolvedAuthKeyFile, to: directory.appendingPathComponent(Names.authKeyFileName))
        let database = try HashedFileCopy.digest(of: copy)
        let manifest = RelayBackupManifest(
            format: Names.currentFormat, createdAt: configuration.now(), migrations: migrations,
            database: .init(size: database.size, sha256: database.sha256),
            authKey: .init(size: authKey.size, sha256: authKey.sha256), blobs: blobs,
            blobsGoneDuringBackup: gone.count)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let url = directory.appendingPathComponent(Names.fileName)
        do {
            try encoder.encode(manifest).write(to: url, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        } catch {
            throw RelayBackupError.fileSystem("cannot write \(url.path): \(error.localizedDescription)")
        }
        return manifest
    }

    /// Makes `directory` (0700: it holds every account's data and the sign-in key) with its
    /// `blobs/`, or takes an empty one.
    private static func prepare(_ directory: URL) throws {
        let files = FileManager.default
        if let existing = try? files.contentsOfDirectory(atPath: directory.path), !existing.isEmpty {
            throw RelayBackupError.outputNotEmpty(directory.path)
        }
        if files.fileExists(atPath: directory.path),
            (try? files.contentsOfDirectory(atPath: directory.path)) == nil
        {
            throw RelayBackupError.outputNotEmpty(directory.path)
        }
        do {
            try files.createDirectory(
                at: directory.appendingPathComponent(RelayBackupManifest.blobDirectoryName),
                withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try files.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        } catch {
            throw RelayBackupError.fileSystem("cannot make \(directory.path): \(error.localizedDescription)")
        }
    }

    private struct BlobRow {
        let id: UUID
        let sha256: String
    }

    private static func blobRows(on snapshot: SQLiteConnection) async throws -> [BlobRow] {
        typealias Column = BlobRecord.Column
        let rows = try await snapshot.query("SELECT id, \(Column.sha256) FROM \(BlobRecord.schema) ORDER BY id", [])
        return try rows.map { row in
            guard let text = row.column("id")?.string, let id = UUID(uuidString: text),
                let sha256 = row.column(Column.sha256)?.string
            else { throw RelayBackupError.damaged("a blob row of the database copy cannot be read") }
            return BlobRow(id: id, sha256: sha256)
        }
    }

    /// Copies each row's file, checking it against the digest its row recorded; returns what was
    /// copied and the ids whose files were gone.
    private static func copy(
        _ rows: [BlobRow], from source: URL, to target: URL, progress: (Int, Int) -> Void
    ) throws -> ([RelayBackupManifest.Blob], [UUID]) {
        var copied: [RelayBackupManifest.Blob] = []
        var gone: [UUID] = []
        for (index, row) in rows.enumerated() {
            let name = row.id.canonicalString
            let result: HashedFileCopy.Copied
            do {
                result = try HashedFileCopy.copy(
                    source.appendingPathComponent(name), to: target.appendingPathComponent(name))
            } catch CocoaError.fileNoSuchFile {
                gone.append(row.id)
                continue
            } catch {
                throw RelayBackupError.fileSystem("cannot copy blob \(name): \(error.localizedDescription)")
            }
            guard result.sha256 == row.sha256 else {
                throw RelayBackupError.damaged("the relay's blob \(name) does not match the digest stored with it")
            }
            copied.append(.init(id: row.id, size: result.size, sha256: result.sha256))
            progress(index + 1, rows.count)
        }
        return (copied, gone)
    }

    private static func removeBlob(_ id: UUID, on snapshot: SQLiteConnection) async throws {
        let key = SQLiteData.text(id.uppercasedString)
        _ = try await snapshot.query(
            "DELETE FROM \(BlobFetchTable.name) WHERE \(BlobFetchTable.Column.blobID) = ?", [key])
        _ = try await snapshot.query(
            "DELETE FROM \(BlobGrantRecord.schema) WHERE \(BlobGrantRecord.Column.blobID) = ?", [key])
        _ = try await snapshot.query("DELETE FROM \(BlobRecord.schema) WHERE id = ?", [key])
    }

    private static func migrationCount(on snapshot: SQLiteConnection) async throws -> Int {
        let rows = try await snapshot.query("SELECT COUNT(*) AS n FROM _fluent_migrations", [])
        return rows.first?.column("n")?.integer ?? 0
    }

    private static func copyFile(_ source: URL, to target: URL) throws -> HashedFileCopy.Copied {
        do {
            return try HashedFileCopy.copy(source, to: target)
        } catch {
            throw RelayBackupError.fileSystem("cannot copy \(source.path): \(error.localizedDescription)")
        }
    }
}
