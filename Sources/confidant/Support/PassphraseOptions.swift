import ArgumentParser
import Foundation

/// Where a passphrase comes from: `--passphrase-file`, then `CONFIDANT_PASSPHRASE`, then a no-echo prompt.
struct PassphraseOptions: ParsableArguments {
    @Option(name: .long, help: "Read the passphrase from the first line of this file.")
    var passphraseFile: String?

    static let environmentVariable = "CONFIDANT_PASSPHRASE"

    /// - Parameter confirm: ask twice when prompting (for a new passphrase).
    func passphrase(prompt: String = "Passphrase: ", confirm: Bool = false) throws -> String {
        let passphrase: String
        if let passphraseFile {
            let text = try FileIO.readText(passphraseFile)
            passphrase = String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        } else if let fromEnvironment = ProcessInfo.processInfo.environment[Self.environmentVariable] {
            passphrase = fromEnvironment
        } else {
            passphrase = try Terminal.readSecret(prompt: prompt)
            if confirm, try Terminal.readSecret(prompt: "Repeat passphrase: ") != passphrase {
                throw CLIError.passphraseMismatch
            }
        }
        guard !passphrase.isEmpty else { throw CLIError.emptyPassphrase }
        return passphrase
    }
}
