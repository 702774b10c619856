import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation

/// The profile and passphrase every account and chat command needs.
struct MessengerOptions: ParsableArguments {
    @OptionGroup var profile: ProfileOptions
    @OptionGroup var passphrase: PassphraseOptions

    @Option(
        name: .long, help: "scrypt cost (log2 N, 10…20) for a new device key file; default 17, about half a second.")
    var scryptLog2n: UInt8 = ScryptParameters.interactive.log2N

    func storage() throws -> ProfileStorage {
        try ProfileStorage(
            directory: profile.directory, keyParameters: ScryptParameters(log2N: scryptLog2n, r: 8, p: 1))
    }

    func profilePassphrase(confirmIfNew: Bool = false) throws -> String {
        let isNew = try !FileManager.default.fileExists(
            atPath: profile.directory.appendingPathComponent("identity.key").path)
        return try passphrase.passphrase(
            prompt: isNew && confirmIfNew ? "New profile passphrase: " : "Profile passphrase: ",
            confirm: isNew && confirmIfNew)
    }

    /// Opens the signed-in profile.
    func open() throws -> Messenger {
        try Messenger.open(storage(), passphrase: profilePassphrase())
    }
}

/// Where the account password comes from: `--password-stdin`, else a no-echo prompt.
struct PasswordOptions: ParsableArguments {
    @Flag(name: .long, help: "Read the account password from the first line of standard input.")
    var passwordStdin = false

    func password() throws -> String {
        let password: String
        if passwordStdin {
            password = readLine(strippingNewline: true) ?? ""
        } else {
            password = try Terminal.readSecret(prompt: "Account password: ")
        }
        guard !password.isEmpty else { throw CLIError.invalidArgument("the password is empty") }
        return password
    }
}

/// `--json` on listing commands.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON for scripts instead of a table.")
    var json = false
}

/// Runs a messenger call and prints pending work: each command first sends what waits in the
/// outbox and fetches what waits on the server; being offline is reported but not fatal.
func syncQuietly(_ messenger: Messenger) async -> String? {
    do {
        _ = try await messenger.sync()
        return nil
    } catch let error as ConfidantKitError {
        if case .serverUnreachable = error { return "offline: \(error.description); showing what this device has" }
        return error.description
    } catch {
        return String(describing: error)
    }
}
