import ArgumentParser
import ConfidantVault
import Foundation

/// Backup targets by name. Only directories today; the relay server's blob store joins when
/// the server exists (it will implement `BackupTarget`).
enum BackupTargets {
    static func target(_ argument: String) throws -> any BackupTarget {
        if argument == "server" {
            throw CLIError.invalidArgument("backups to the Confidant server need the relay server's blob store, which this build does not have yet; give a directory")
        }
        return DirectoryBackupTarget(root: URL(fileURLWithPath: argument))
    }
}

struct VaultBackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back the vault up, incrementally; the target sees only ciphertext and sizes.",
        discussion: "Only objects the target lacks are sent; an interrupted backup resumes on the next run.")

    @OptionGroup var options: VaultOptions
    @Option(name: .long, help: "A directory (a USB disk, a mounted share).") var to: String

    func run() async throws {
        let target = try BackupTargets.target(to)
        let vault = try options.open()
        let progress = ProgressLine()
        let report = try await vault.backup(to: target) { progress.update("backing up: \($0)") }
        progress.finish()
        print("backed up to \(target.description): \(report.objectsTransferred) object(s) sent (\(byteCount(report.bytesTransferred))), \(report.objectsSkipped) already there")
    }
}

struct VaultRestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Rebuild the vault from a backup with its passphrase (into a profile without a vault).")

    @OptionGroup var options: VaultOptions
    @Option(name: .long, help: "The backup directory.") var from: String

    func run() async throws {
        let target = try BackupTargets.target(from)
        let secret = try options.passphrase.passphrase(prompt: "Passphrase of the backed-up vault: ")
        let progress = ProgressLine()
        let (vault, report) = try await Vault.restore(from: target, into: options.directory, passphrase: secret) { progress.update("restoring: \($0)") }
        progress.finish()
        let status = try vault.status()
        print("restored \(status.items) item(s) in \(status.chapters) chapter(s) to \(vault.directory.path): \(report.objectsTransferred) object(s) fetched, \(report.objectsSkipped) already present")
    }
}
