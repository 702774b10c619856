import ArgumentParser

/// `confidant server …`: running the relay. `confidant server` alone (or `confidant serve`) serves.
struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server", abstract: "Run the relay server.",
        subcommands: [ServeCommand.self], defaultSubcommand: ServeCommand.self)
}
