import ArgumentParser
import ConfidantServer
import Foundation
import Logging

/// `confidant-test-relay`: the relay as the tests run it in a process of its own — the same
/// `RelayServer` as `confidant serve`, with cheap password hashing (bcrypt cost 4) and sign-up and
/// sign-in start limits raised, so that a test can create many accounts quickly. It exists only in
/// the test build: the `confidant` binary has no switch that weakens its hashing.
@main
struct TestRelayServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "confidant-test-relay")

    @Option var port = 0
    @Option var dataDir: String
    @Option var database: String?
    @Option var logLevel = "error"
    @Option(help: "Seconds before an e-mail code may be sent again (the browser test waits less than a minute).")
    var emailCodeResendSeconds: Double?
    @Option(help: "The largest attachment, in MiB.") var maxAttachmentMib: Int?
    @Option(help: "MiB of disk to keep free for messages.") var minFreeMib: Int?
    @Option(help: "The key file that encrypts sign-in secrets (instances sharing a database share it).")
    var authKeyFile: String?
    @Option(help: "Who may sign up: open, invite or closed.") var registration = "open"
    @Option(name: .customLong("trusted-proxy"), help: "A reverse proxy (CIDR) whose X-Forwarded-For is believed.")
    var trustedProxies: [String] = []

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .error
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
        configuration.port = port
        configuration.useTestingSecurityParameters()
        configuration.freeSignUpsPerAddress = 1_000_000
        configuration.signInStarts.perAddress.limit = 1_000_000
        if let emailCodeResendSeconds { configuration.emailCodeResendSeconds = emailCodeResendSeconds }
        if let maxAttachmentMib { configuration.maximumBlobBytes = maxAttachmentMib << 20 }
        if let minFreeMib { configuration.minimumFreeBytes = Int64(minFreeMib) << 20 }
        configuration.authKeyFile = authKeyFile.map { URL(fileURLWithPath: $0) }
        guard let registration = Registration(rawValue: registration) else {
            throw ValidationError("--registration must be open, invite or closed.")
        }
        configuration.registration = registration
        configuration.trustedProxies = try trustedProxies.map {
            guard let network = IPNetwork($0) else { throw ValidationError("--trusted-proxy \($0) is not a network") }
            return network
        }
        let server = try await RelayServer(configuration: configuration)
        try await server.runUntilSignalled { bound in
            FileHandle.standardOutput.write(
                Data(
                    "confidant relay listening on http://127.0.0.1:\(bound) (database \(configuration.database))\n".utf8
                ))
        }
    }
}
