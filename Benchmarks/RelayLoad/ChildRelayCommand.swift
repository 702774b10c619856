import ArgumentParser
import ConfidantServer
import Foundation
import Logging

/// `relay-load child-relay`: the relay under test, in its own process. The same `RelayServer` as
/// `confidant serve`, with cheap password hashing and no sign-up throttle: sign-up is not what is
/// measured, and this switch exists only in the benchmark, never in the `confidant` binary.
struct ChildRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "child-relay", abstract: "The relay under test (started by `run`).",
        shouldDisplay: false)

    @Option(help: "Directory for blobs and the default SQLite file.") var dataDir: String
    @Option(help: "sqlite:PATH or postgres://… (default: SQLite in the data directory).") var database: String?

    /// Set by `ChildServer` for its child: the relay stops when its standard input ends, which
    /// happens when the benchmark that started it ends, however it ends.
    static let exitWithParentVariable = "CONFIDANT_BENCH_EXIT_WITH_PARENT"

    func run() async throws {
        if ProcessInfo.processInfo.environment[Self.exitWithParentVariable] == "1" {
            // A thread of its own: the read blocks until the parent's end closes.
            Thread.detachNewThread {
                _ = FileHandle.standardInput.readDataToEndOfFile()
                kill(getpid(), SIGTERM)
            }
        }
        let level =
            Logger.Level(rawValue: ProcessInfo.processInfo.environment["CONFIDANT_BENCH_SERVER_LOG"] ?? "error")
            ?? .error
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var configuration = ServerConfiguration.embedded(dataDirectory: URL(fileURLWithPath: dataDir))
        if let database {
            do { configuration.database = try DatabaseLocation(parsing: database) } catch {
                throw ValidationError(error.description)
            }
        }
        configuration.port = 0
        configuration.useTestingSecurityParameters()
        configuration.freeSignUpsPerAddress = 1_000_000
        configuration.signInStarts.perAddress.limit = 1_000_000
        // Generator senders send far faster than people: the per-account rate is not what is measured.
        configuration.sendRate = .init(burst: 1e9, perSecond: 1e9)
        let server = try await RelayServer(configuration: configuration)
        let port = try await server.start()
        FileHandle.standardOutput.write(Data("relay listening on http://127.0.0.1:\(port)\n".utf8))
        // Runs until the benchmark stops it (SIGTERM ends the process).
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
