import ArgumentParser
import ConfidantCrypto
import ConfidantVault
import Foundation

struct VaultInitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init", abstract: "Create an empty vault protected by a new passphrase.")

    @OptionGroup var options: VaultOptions

    @Option(name: .long, help: "scrypt cost as log2 N (10…20; default 17, about half a second).")
    var scryptLog2n: UInt8 = ScryptParameters.interactive.log2N

    func run() async throws {
        let parameters = try ScryptParameters(log2N: scryptLog2n, r: 8, p: 1)
        let secret = try options.passphrase.passphrase(prompt: "New vault passphrase: ", confirm: true)
        let vault = try Vault.create(at: options.directory, passphrase: secret, parameters: parameters)
        print("vault created at \(vault.directory.path)")
        print("remember the passphrase: without it nothing in the vault or its backups can be recovered")
    }
}

struct VaultChangePassphraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "change-passphrase",
        abstract: "Protect the vault with a new passphrase (re-wraps the key; no content is re-encrypted).",
        discussion: "The new passphrase comes from --new-passphrase-file, CONFIDANT_NEW_PASSPHRASE, or a prompt.")

    @OptionGroup var options: VaultOptions

    @Option(name: .long, help: "Read the new passphrase from the first line of this file.")
    var newPassphraseFile: String?

    func run() async throws {
        let vault = try options.open()
        let new: String
        if let given = try PassphraseOptions.given(file: newPassphraseFile, variable: "CONFIDANT_NEW_PASSPHRASE") {
            new = given
        } else {
            new = try Terminal.readSecret(prompt: "New vault passphrase: ")
            guard try Terminal.readSecret(prompt: "Repeat new passphrase: ") == new else {
                throw CLIError.passphraseMismatch
            }
            guard !new.isEmpty else { throw CLIError.emptyPassphrase }
        }
        try vault.changePassphrase(to: new)
        print("passphrase changed; backups made from now on use the new one")
    }
}

struct VaultVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Decrypt and check everything; report every damaged item.")

    @OptionGroup var options: VaultOptions

    func run() async throws {
        let vault = try options.open()
        let problems = try vault.verify()
        if problems.isEmpty {
            let status = try vault.status()
            print("ok: \(status.chapters) chapters, \(status.items) items, \(status.mediaFiles) files verified")
            return
        }
        for problem in problems { print("damaged: \(problem)") }
        throw ExitCode(1)
    }
}

struct VaultStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Counts and sizes.")

    @OptionGroup var options: VaultOptions

    func run() async throws {
        let vault = try options.open()
        let status = try vault.status()
        print("vault:     \(vault.directory.path)")
        print("chapters:  \(status.chapters)")
        print("items:     \(status.items)")
        print(
            "files:     \(status.mediaFiles) (\(byteCount(status.plaintextBytes)), \(byteCount(status.objectBytes)) encrypted)"
        )
    }
}
