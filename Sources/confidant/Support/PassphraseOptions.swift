import ArgumentParser
import Foundation

/// Where a passphrase comes from: `--passphrase-file`, then `CONFIDANT_PASSPHRASE`, then a no-echo prompt.
struct PassphraseOptions: ParsableArguments {
    @Option(name: .long, help: "Read the passphrase from the first line of this file.")
    var passphraseFile: String?

    static let environmentVariable = "CONFIDANT_PASSPHRASE"

    /// - Parameter confirm: ask twice when prompting (for a new passphrase).
    func passphrase(prompt: String = "Passphrase: ", confirm: Bool = false) throws -> String {
        if let given = try Self.given(file: passphraseFile, variable: Self.environmentVariable) { return given }
        let passphrase = try Terminal.readSecret(prompt: prompt)
        if confirm, try Terminal.readSecret(prompt: "Repeat passphrase: ") != passphrase {
            throw CLIError.passphraseMismatch
        }
        guard !passphrase.isEmpty else { throw CLIError.emptyPassphrase }
        return passphrase
    }

    /// The first line of `file`, else the environment's `variable`; nil when neither is given.
    static func given(file: String?, variable: String) throws -> String? {
        let passphrase: String
        if let file {
            passphrase = try FileIO.firstLine(of: file)
        } else if let fromEnvironment = ProcessInfo.processInfo.environment[variable] {
            passphrase = fromEnvironment
        } else {
            return nil
        }
        guard !passphrase.isEmpty else { throw CLIError.emptyPassphrase }
        return passphrase
    }
}
