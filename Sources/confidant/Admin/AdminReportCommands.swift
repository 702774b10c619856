import ArgumentParser
import ConfidantServer
import Foundation

/// `confidant admin stats`.
struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Count accounts, devices, sessions, waiting messages and stored bytes.")

    @OptionGroup var storage: RelayStorageOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let stats = try await withRelayAdministration(storage) { try await $0.statistics() }
        if output.json { return try JSONOutput.print(stats) }
        print(
            TerminalStyle.pairs([
                (
                    "accounts",
                    "\(stats.accounts) (\(stats.verifiedAccounts) verified, \(stats.disabledAccounts) disabled)"
                ),
                ("devices", "\(stats.devices)"),
                ("sessions", "\(stats.activeSessions) active"),
                ("waiting", "\(stats.waitingEntries) mailbox entries"),
                ("attachments", byteCount(stats.attachmentBytes)),
                ("backups", byteCount(stats.backupBytes)),
            ]))
    }
}

/// `confidant admin audit`.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "Show the latest administrative actions, newest first.")

    @OptionGroup var storage: RelayStorageOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "At most this many (1…1000).") var limit = 50

    func run() async throws {
        guard (1...1_000).contains(limit) else { throw ValidationError("--limit takes 1…1000") }
        let entries = try await withRelayAdministration(storage) { try await $0.audit(limit: limit) }
        if output.json { return try JSONOutput.print(entries) }
        guard !entries.isEmpty else { return print("no administrative actions yet") }
        print(
            TerminalStyle.table(
                ["#", "WHEN", "WHO", "ACTION", "TARGET", "DETAIL"],
                entries.map {
                    [
                        "\($0.sequence)", $0.at.formatted(.iso8601),
                        TerminalText.printable($0.actor, keepingNewlines: false), $0.action,
                        $0.target, TerminalText.printable($0.detail ?? "", keepingNewlines: false),
                    ]
                }))
    }
}
