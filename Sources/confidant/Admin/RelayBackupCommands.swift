import ArgumentParser
import ConfidantServer
import Foundation

/// `confidant admin backup --out DIR`: a consistent copy of a running relay.
struct RelayBackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup", abstract: "Copy the relay's database, blobs and sign-in key while it runs (SQLite).",
        discussion:
            "The directory holds every account's data and the key that encrypts sign-in secrets: keep it as safe as the server. On PostgreSQL use pg_dump (docs/OPERATIONS.md)."
    )

    @OptionGroup var storage: RelayStorageOptions
    @Option(help: "A new (or empty) directory for the backup.") var out: String

    func run() async throws {
        let progress = BlobProgress(verb: "copied")
        let manifest = try await withRelayAdministration(storage) {
            try await $0.backup(to: URL(fileURLWithPath: out), progress: progress.report)
        }
        print(
            "backed up the relay to \(out): database \(manifest.database.size) bytes, \(manifest.blobs.count) blobs (\(manifest.blobBytes) bytes)"
        )
        if manifest.blobsGoneDuringBackup > 0 {
            print(
                "\(manifest.blobsGoneDuringBackup) blobs were removed by the relay while it ran; the copy leaves them out"
            )
        }
        print("restore it with: confidant admin restore --from \(out) --data-dir NEW_DIR")
    }
}

/// `confidant admin restore --from DIR`: a backup into a new data directory.
struct RelayRestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore", abstract: "Restore a backup of `admin backup` into a new data directory.",
        discussion: "Every file is checked against the backup's manifest; nothing that exists is overwritten.")

    @OptionGroup var storage: RelayStorageOptions
    @Option(help: "The backup's directory.") var from: String

    func run() async throws {
        let progress = BlobProgress(verb: "restored")
        let dataDir = try storage.locations().dataDir
        let manifest = try RelayRestore.restore(
            from: URL(fileURLWithPath: from), into: try storage.configuration(), progress: progress.report)
        print(
            "restored the backup of \(manifest.createdAt.formatted(.iso8601)) into \(dataDir): \(manifest.blobs.count) blobs"
        )
        print("start it with: confidant serve --data-dir \(dataDir)")
    }
}

/// Progress of a long copy on standard error: a line at each tenth, for a thousand blobs or more.
struct BlobProgress: Sendable {
    let verb: String

    var report: @Sendable (Int, Int) -> Void {
        { [verb] done, total in
            guard total >= 1_000, done % (total / 10) == 0 || done == total else { return }
            FileHandle.standardError.write(Data("\(verb) \(done) of \(total) blobs\n".utf8))
        }
    }
}
