import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import ConfidantVault
import Foundation

/// Backup targets by name: `server` is the profile's Confidant server (the profile must be signed
/// in: `confidant account register` or `login`); anything else is a directory.
enum BackupTargets {
    static func target(_ argument: String, options: VaultOptions, profilePassphrase: ProfilePassphraseOptions)
        async throws -> any BackupTarget
    {
        guard argument == "server" else { return DirectoryBackupTarget(root: URL(fileURLWithPath: argument)) }
        let profile = ProfileStorage(directory: try options.profile.directory)
        let passphrase = try profilePassphrase.passphrase(else: options.passphrase)
        let messenger: Messenger
        do {
            messenger = try Messenger.open(profile, passphrase: passphrase.text)
        } catch IdentityKeyFileError.wrongPassphraseOrCorrupted where !passphrase.isOwn {
            // The vault's passphrase was tried on the profile's key: say which one is wanted.
            throw CLIError.invalidArgument(
                "the profile's passphrase is needed to reach its server, and the one given does not open its key; "
                    + "give it with \(ProfilePassphraseOptions.environmentVariable) or --profile-passphrase-file")
        }
        return try await RelayBackupTarget(messenger: messenger)
    }
}

struct VaultBackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back the vault up, incrementally; the target sees only ciphertext and sizes.",
        discussion: """
            Only objects the target lacks are sent; an interrupted backup resumes on the next run. Each vault \
            backs up under its own backup id (shown), so several vaults — several devices — can share a target; \
            a backup under this vault's id that this vault did not write is never replaced.
            """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var profilePassphrase: ProfilePassphraseOptions
    @Option(
        name: .long, help: "'server' (the profile's Confidant server) or a directory (a USB disk, a mounted share).")
    var to: String

    func run() async throws {
        let target = try await BackupTargets.target(to, options: options, profilePassphrase: profilePassphrase)
        let vault = try options.open()
        let progress = ProgressLine()
        let report = try await vault.backup(to: target) { progress.update("backing up: \($0)") }
        progress.finish()
        print(
            "backed up to \(target.description) as backup \(vault.backupID): \(report.objectsTransferred) object(s) sent (\(byteCount(report.bytesTransferred))), \(report.objectsSkipped) already there"
        )
    }
}

struct VaultRestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Rebuild the vault from a backup with its passphrase (into a profile without a vault).")

    @OptionGroup var options: VaultOptions
    @OptionGroup var profilePassphrase: ProfilePassphraseOptions
    @Option(name: .long, help: "'server' (the profile's Confidant server; sign in first) or the backup directory.")
    var from: String
    @Option(
        name: .long,
        help:
            "Which backup, when the passphrase opens several on the target (as `vault backup` printed it; 'legacy' for one made before backup ids)."
    )
    var backupID: String?

    func run() async throws {
        let target = try await BackupTargets.target(from, options: options, profilePassphrase: profilePassphrase)
        let secret = try options.passphrase.passphrase(prompt: "Passphrase of the backed-up vault: ")
        let progress = ProgressLine()
        let (vault, report) = try await Vault.restore(
            from: target, into: options.directory, passphrase: secret, backupID: backupID
        ) {
            progress.update("restoring: \($0)")
        }
        progress.finish()
        let status = try vault.status()
        print(
            "restored \(status.items) item(s) in \(status.chapters) chapter(s) to \(vault.directory.path): \(report.objectsTransferred) object(s) fetched, \(report.objectsSkipped) already present"
        )
    }
}
