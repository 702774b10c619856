import ArgumentParser

/// The `confidant` command: server, accounts and chat, vault, sign-in and crypto tools.
@main
struct Confidant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "confidant",
        abstract: "End-to-end encrypted messaging, an encrypted vault and adaptive sign-in.",
        version: "0.1.0",
        subcommands: [
            RegisterCommand.self, LoginCommand.self, LogoutCommand.self, WhoAmICommand.self, UsersCommand.self, SendCommand.self,
            InboxCommand.self, HistoryCommand.self, ChatCommand.self, VerifyCommand.self, DevicesCommand.self,
            KeygenCommand.self, KeyCommand.self, SealCommand.self, OpenCommand.self, InspectCommand.self,
            FingerprintCommand.self, CipherCommand.self, VaultCommand.self, AuthCommand.self, ServeCommand.self, BenchCommand.self,
        ]
    )

    /// Runs the command; errors from the libraries get the command that fixes them appended.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: CLIAdvice.explain(error))
        }
    }
}
