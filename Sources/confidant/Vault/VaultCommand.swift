import ArgumentParser
import ConfidantVault
import Foundation

/// `confidant vault …`: the encrypted memories journal.
struct VaultCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vault",
        abstract: "An encrypted journal of memories: chapters, text, photos and videos, with backup and restore.",
        subcommands: [
            VaultInitCommand.self, VaultChapterCommand.self, VaultAddCommand.self, VaultListCommand.self,
            VaultShowCommand.self, VaultEditCommand.self, VaultExportCommand.self, VaultRemoveCommand.self,
            VaultChangePassphraseCommand.self,
            VaultVerifyCommand.self, VaultStatusCommand.self, VaultBackupCommand.self, VaultRestoreCommand.self,
        ]
    )
}

/// Where the vault is and how to unlock it; shared by every vault command.
struct VaultOptions: ParsableArguments {
    @OptionGroup var profile: ProfileOptions

    @Option(name: .long, help: "Use this vault directory instead of the profile's.")
    var vaultDir: String?

    @OptionGroup var passphrase: PassphraseOptions

    var directory: URL {
        get throws {
            try vaultDir.map { URL(fileURLWithPath: $0) } ?? profile.directory.appendingPathComponent("vault")
        }
    }

    func open() throws -> Vault {
        try Vault.open(at: directory, passphrase: passphrase.passphrase(prompt: "Vault passphrase: "))
    }
}

extension Item {
    var dateText: String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: timestamp)
    }
}

func byteCount(_ bytes: some BinaryInteger) -> String {
    ByteCountFormatter.string(fromByteCount: Int64(clamping: bytes), countStyle: .file)
}
