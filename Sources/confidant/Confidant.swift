import ArgumentParser
import ConfidantKit
import Foundation

/// The `confidant` command: accounts and chat, the vault, sign-in, keys by hand, the server and
/// the cipher lab — grouped, with short aliases for what people run every day.
@main
struct Confidant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "confidant",
        abstract: "End-to-end encrypted messaging, an encrypted vault and adaptive sign-in.",
        discussion: "Everyday shortcuts: `send` (= chat send), `inbox` (= chat inbox), `serve` (= server serve).",
        version: "0.2.0",
        subcommands: [
            AppCommand.self, AccountCommand.self, ChatCommand.self, VaultCommand.self, AuthCommand.self,
            KeysCommand.self,
            GroupCommand.self, ServerCommand.self, AdminCommand.self,
            LabCommand.self,
            // Aliases for the everyday commands.
            SendCommand.self, InboxCommand.self, AttachmentCommand.self, ServeCommand.self,
        ]
    )

    /// Runs the command; errors from the libraries get the command that fixes them appended.
    static func main() async {
        MemoryTuning.keepFreedBlocks()
        var profile: ProfileOptions?
        var origins: [String: ServeSettings.Origin] = [:]
        do {
            var arguments = Array(CommandLine.arguments.dropFirst())
            if let serve = ServeSettings.serveIndex(in: arguments) {
                let expanded = try ServeSettings.expand(
                    Array(arguments[(serve + 1)...]), environment: ProcessInfo.processInfo.environment)
                arguments = Array(arguments[...serve]) + expanded.arguments
                origins = expanded.origins
            }
            var command = try parseAsRoot(arguments)
            profile = ProfileOptions.find(in: command)
            if command is any EventLoopCommand { EventLoopConcurrency.install() }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as SettingsError {
            exit(withError: error)
        } catch {
            exit(withError: ServeSettings.naming(origins, in: CLIAdvice.explain(error, profile: profile)))
        }
    }
}
