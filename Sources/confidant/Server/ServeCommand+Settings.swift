import ConfidantServer
import Foundation

extension ServeCommand {
    /// Every setting's value as `serve` will use it, by option name; the database URL's password
    /// is masked.
    var effectiveSettings: [(name: String, value: String)] {
        let locations = try? storage.locations()
        let database = locations?.database.flatMap { try? DatabaseLocation(parsing: $0).description }
        let on = { (flag: Bool) in flag ? "true" : "false" }
        return [
            ("host", host), ("port", "\(port)"),
            ("trusted-proxy", trustedProxies.isEmpty ? "none" : trustedProxies.joined(separator: ", ")),
            ("tls-cert", tlsCert ?? "none (plain HTTP)"), ("tls-key", tlsKey ?? "none"),
            ("database", database ?? "sqlite in the data directory"),
            ("data-dir", locations?.dataDir ?? RelayStorageOptions.defaultDataDirectory),
            ("auth-key-file", locations?.authKeyFile ?? "auth.key in the data directory"),
            ("registration", registration), ("log-level", logLevel), ("log-format", logFormat),
            ("sqlite-sync", sqliteSync), ("postgres-connections", "\(postgresConnections)"),
            ("smtp-host", smtpHost ?? "none (codes go to the development outbox)"), ("smtp-port", "\(smtpPort)"),
            ("smtp-from", smtpFrom ?? "none"), ("smtp-require-tls", on(smtpRequireTls)),
            ("smtp-allow-plaintext", on(smtpAllowPlaintext)), ("smtp-ca-file", smtpCaFile ?? "the system's"),
            ("max-attachment-mib", "\(maxAttachmentMib)"), ("min-free-mib", "\(minFreeMib)"),
            ("attachment-retention-days", "\(attachmentRetentionDays)"),
            ("mailbox-retention-days", "\(mailboxRetentionDays)"),
            ("unverified-account-days", "\(unverifiedAccountDays)"),
            ("audit-retention-days", auditRetentionDays.map { "\($0)" } ?? "kept for good"),
            ("metrics-port", metricsPort.map { "\($0)" } ?? "off"), ("metrics-host", metricsHost),
            ("admin-token-file", adminTokenFile ?? "off"),
        ]
    }

    /// `--check-config`: the settings, each with where it came from when not the default.
    func printSettings() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let serve = ServeSettings.serveIndex(in: arguments) ?? 0
        let given = Set(arguments.dropFirst(serve + 1).compactMap(ServeSettings.optionName))
        let origins =
            (try? ServeSettings.expand(
                Array(arguments.dropFirst(serve + 1)), environment: ProcessInfo.processInfo.environment
            ).origins) ?? [:]
        let width = effectiveSettings.map(\.name.count).max() ?? 0
        for (name, value) in effectiveSettings {
            let origin = given.contains(name) ? "command line" : origins[name] ?? "default"
            print("\(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(value)  (\(origin))")
        }
        print("the settings are valid")
    }
}
