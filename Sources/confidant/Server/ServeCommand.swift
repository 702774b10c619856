import ArgumentParser
import ConfidantAuth
import ConfidantServer
import Dispatch
import Foundation
import Logging

/// `confidant serve`: runs the relay until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the relay server (SQLite in ./.confidant-server by default).",
        discussion:
            "Binds 127.0.0.1 unless --host says otherwise. Migrations run at start; SIGINT/SIGTERM stop it gracefully."
    )

    @Option(help: "Address to bind.") var host = "127.0.0.1"
    @Option(
        name: .customLong("trusted-proxy"),
        help:
            "A reverse proxy (CIDR, repeatable) whose X-Forwarded-For is believed: the client is the rightmost address in it that is not a trusted proxy."
    )
    var trustedProxies: [String] = []
    @Option(help: "Port (0 picks a free one and prints it).") var port = 8080
    @Option(help: "PEM certificate chain: serve HTTPS and WSS (with --tls-key). SIGHUP reloads both files.")
    var tlsCert: String?
    @Option(help: "PEM private key of --tls-cert.") var tlsKey: String?
    @OptionGroup var storage: RelayStorageOptions
    @Option(
        help:
            "Who may sign up: open (anyone who reaches the server), invite (with a code from `confidant admin invite create`) or closed."
    )
    var registration = "open"
    @Option(help: "Log level: trace, debug, info, notice, warning, error.") var logLevel = "info"
    @Option(help: "Log lines as text, or as one JSON object each (json), for a log shipper.") var logFormat = "text"
    @Option(help: "SQLite durability: normal (survives a server crash) or full (also a power cut; slower).")
    var sqliteSync = "normal"
    @Option(help: "PostgreSQL connections per core (each instance opens up to this times its cores, plus one).")
    var postgresConnections = 8
    @Option(
        help:
            "SMTP server for e-mail sign-in codes (without it, codes go to <data-dir>/outbox and the log: development only)."
    )
    var smtpHost: String?
    @Option(help: "SMTP port.") var smtpPort = 25
    @Option(help: "From address of sign-in messages.") var smtpFrom: String?
    @Flag(help: "Refuse to send codes unless the SMTP server offers STARTTLS, on loopback too (the default elsewhere).")
    var smtpRequireTls = false
    @Flag(help: "Send codes in the clear when a non-loopback SMTP server offers no STARTTLS (a private link only).")
    var smtpAllowPlaintext = false
    @Option(help: "PEM certificates to trust for the SMTP server instead of the system's.") var smtpCaFile: String?
    @Option(help: "The largest attachment the server stores, in MiB (1…4096).") var maxAttachmentMib = 25
    @Option(help: "MiB of disk to keep free: attachments and backups that would leave less are refused (0…1048576).")
    var minFreeMib = 256
    @Option(help: "Days an attachment stays when not every device it was meant for fetched it (1…365).")
    var attachmentRetentionDays = 30
    @Option(help: "Days an unacknowledged mailbox entry, and the record of a sent message id, are kept (1…365).")
    var mailboxRetentionDays = 30
    @Option(help: "Days an account whose e-mail address no sign-in proved is kept (1…365).")
    var unverifiedAccountDays = 7
    @Option(help: "Days the administrative audit is kept (1…36500); without it, for good.")
    var auditRetentionDays: Int?
    @Option(help: "Serve Prometheus metrics at GET /metrics on this port, a listener of its own (0 picks one).")
    var metricsPort: Int?
    @Option(help: "Address the metrics listener binds (with --metrics-port).") var metricsHost = "127.0.0.1"
    @Option(
        help:
            "Serve the admin API (/admin/v1/) on the metrics listener to callers with the token in this file (from `confidant admin token`)."
    )
    var adminTokenFile: String?
    @Flag(help: "Check the settings (file, environment, flags), print the configuration they make and exit.")
    var checkConfig = false

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        guard let format = LogFormat(rawValue: logFormat) else {
            throw ValidationError("--log-format must be text or json.")
        }
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                switch format {
                case .text: StreamLogHandler.standardError(label: label)
                case .json: JSONLogHandler(label: label)
                }
            handler.logLevel = level
            return handler
        }
        let dataDirectory = try storage.dataDirectory
        var configuration = try storage.configuration()
        guard let registration = Registration(rawValue: registration) else {
            throw ValidationError("--registration must be open, invite or closed.")
        }
        configuration.registration = registration
        guard let synchronous = SQLiteSynchronous(rawValue: sqliteSync.uppercased()) else {
            throw ValidationError("--sqlite-sync must be normal or full.")
        }
        configuration.sqliteSynchronous = synchronous
        guard (1...64).contains(postgresConnections) else {
            throw ValidationError("--postgres-connections must be between 1 and 64.")
        }
        configuration.postgresConnectionsPerEventLoop = postgresConnections
        configuration.host = host
        configuration.trustedProxies = try trustedProxies.map { text in
            guard let network = IPNetwork(text) else {
                throw ValidationError("--trusted-proxy \(text) is not an address or CIDR network")
            }
            return network
        }
        configuration.port = port
        switch (tlsCert, tlsKey) {
        case (let cert?, let key?): configuration.tls = TLSFiles(certificateChain: cert, privateKey: key)
        case (nil, nil): break
        default: throw ValidationError("--tls-cert and --tls-key go together.")
        }
        guard (1...4096).contains(maxAttachmentMib) else {
            throw ValidationError("--max-attachment-mib must be between 1 and 4096.")
        }
        configuration.maximumBlobBytes = maxAttachmentMib << 20
        guard (0...1_048_576).contains(minFreeMib) else {
            throw ValidationError("--min-free-mib must be between 0 and 1048576.")
        }
        configuration.minimumFreeBytes = Int64(minFreeMib) << 20
        guard (1...365).contains(attachmentRetentionDays) else {
            throw ValidationError("--attachment-retention-days must be between 1 and 365.")
        }
        configuration.attachmentRetention = TimeInterval(attachmentRetentionDays) * 86_400
        guard (1...365).contains(mailboxRetentionDays) else {
            throw ValidationError("--mailbox-retention-days must be between 1 and 365.")
        }
        configuration.mailboxRetention = TimeInterval(mailboxRetentionDays) * 86_400
        guard (1...365).contains(unverifiedAccountDays) else {
            throw ValidationError("--unverified-account-days must be between 1 and 365.")
        }
        configuration.unverifiedAccountLifetime = TimeInterval(unverifiedAccountDays) * 86_400
        if let auditRetentionDays {
            guard (1...36_500).contains(auditRetentionDays) else {
                throw ValidationError("--audit-retention-days must be between 1 and 36500.")
            }
            configuration.auditRetention = TimeInterval(auditRetentionDays) * 86_400
        }
        if let metricsPort {
            guard (0...65_535).contains(metricsPort) else {
                throw ValidationError("--metrics-port must be between 0 and 65535.")
            }
            configuration.metrics = MetricsAddress(host: metricsHost, port: metricsPort)
        }
        if let adminTokenFile {
            guard metricsPort != nil else {
                throw ValidationError(
                    "--admin-token-file serves the admin API on the metrics listener: give --metrics-port too.")
            }
            configuration.adminTokenFile = URL(fileURLWithPath: adminTokenFile)
        }
        if let smtpHost {
            guard let smtpFrom, (try? EmailAddress(smtpFrom)) != nil else {
                throw ValidationError(
                    "--smtp-host needs --smtp-from with a valid sender address, e.g. no-reply@example.com")
            }
            var smtp = SMTPConfiguration(host: smtpHost, port: smtpPort, sender: smtpFrom)
            if smtpRequireTls && smtpAllowPlaintext {
                throw ValidationError("--smtp-require-tls and --smtp-allow-plaintext contradict each other.")
            }
            if smtpRequireTls { smtp.requireTLS = true }
            if smtpAllowPlaintext { smtp.requireTLS = false }
            smtp.trustRootsFile = smtpCaFile
            configuration.smtp = smtp
        }
        if checkConfig { return printSettings() }
        let server: RelayServer
        do { server = try await RelayServer(configuration: configuration) } catch let error as TLSFilesError {
            throw ValidationError(error.description)
        } catch let error as DataDirectory.Unsafe {
            throw ValidationError(error.description)
        } catch let error as AdminTokenFileError {
            throw ValidationError(error.description)
        }
        let scheme = configuration.tls == nil ? "http" : "https"
        let signal = try await server.runUntilSignalled(
            listening: { bound in
                // The port line is how scripts and tests learn a port chosen with --port 0.
                FileHandle.standardOutput.write(
                    Data(
                        "confidant relay listening on \(scheme)://\(host):\(bound) (database \(configuration.database))\n"
                            .utf8))
                if let metrics = server.metricsPort {
                    FileHandle.standardOutput.write(
                        Data("confidant metrics on http://\(metricsHost):\(metrics)/metrics\n".utf8))
                }
                let loopback = ["127.0.0.1", "::1", "localhost"].contains(host)
                if registration == .open, !loopback {
                    FileHandle.standardError.write(
                        Data(
                            "warning: anyone who reaches \(host) can sign up; use --registration invite (codes from `confidant admin invite create`) or closed\n"
                                .utf8))
                }
                if configuration.tls == nil, !loopback {
                    FileHandle.standardError.write(
                        Data(
                            "warning: plain HTTP on \(host): use --tls-cert/--tls-key, or a TLS-terminating proxy in front\n"
                                .utf8))
                }
                if configuration.smtp == nil {
                    FileHandle.standardError.write(
                        Data(
                            "DEVELOPMENT MODE: no --smtp-host, so e-mail sign-in codes are written to \(dataDirectory.appendingPathComponent("outbox").path) (the log names each file, not the code), not sent\n"
                                .utf8))
                }
            },
            reloaded: { error in
                FileHandle.standardError.write(
                    Data(
                        (error.map { "SIGHUP: the TLS files were not reloaded, the old ones stay: \($0)\n" }
                            ?? "SIGHUP: reloaded the TLS certificate and key\n").utf8))
            })
        FileHandle.standardError.write(Data("received \(signal), shut down\n".utf8))
    }
}

/// How `serve` writes its log lines.
enum LogFormat: String {
    case text, json
}
