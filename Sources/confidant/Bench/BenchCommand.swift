import ArgumentParser

/// `confidant bench …`: load generators for the server side.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure the relay under load on loopback.",
        subcommands: [RelayBenchCommand.self]
    )
}
