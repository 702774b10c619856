import ArgumentParser
import ConfidantServer
import Foundation

/// `confidant admin account list|show|disable|enable|delete|revoke-device`.
struct AccountAdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account", abstract: "Find, inspect, disable, enable and delete accounts; revoke a device.",
        discussion: "ACCOUNT is an e-mail address or a user id. Every change is written to `confidant admin audit`.",
        subcommands: [
            AccountListCommand.self, AccountShowCommand.self, AccountDisableCommand.self, AccountEnableCommand.self,
            AccountDeleteCommand.self, DeviceRevokeCommand.self,
        ])
}

struct AccountListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List accounts by e-mail address, or those matching --search.")

    @OptionGroup var storage: RelayStorageOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "Only accounts whose e-mail address or display name contains this.") var search: String?
    @Option(help: "At most this many (1…1000).") var limit = 100

    func run() async throws {
        guard (1...1_000).contains(limit) else { throw ValidationError("--limit takes 1…1000") }
        let accounts = try await withRelayAdministration(storage) {
            try await $0.listAccounts(search: search, limit: limit)
        }
        if output.json { return try JSONOutput.print(accounts) }
        guard !accounts.isEmpty else { return print(search == nil ? "no accounts yet" : "no account matches") }
        print(
            TerminalStyle.table(
                ["ID", "E-MAIL", "NAME", "STATE", "DEVICES", "LAST ACTIVE"],
                accounts.map {
                    [
                        $0.id.canonicalString, $0.email, TerminalText.printable($0.displayName, keepingNewlines: false),
                        Self.state($0),
                        "\($0.devices)", $0.lastActiveAt.map { $0.formatted(.iso8601) } ?? "never",
                    ]
                }))
        if accounts.count == limit { print("(the first \(limit); narrow with --search or raise --limit)") }
    }

    static func state(_ account: AccountSummary) -> String {
        if account.disabledAt != nil { return "disabled" }
        return account.verifiedAt == nil ? "unverified" : "active"
    }
}

struct AccountShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show one account: its devices, sessions, storage and waiting messages.")

    @OptionGroup var storage: RelayStorageOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The account's e-mail address or id.") var account: String

    func run() async throws {
        let details = try await withRelayAdministration(storage) { try await $0.account(account) }
        if output.json { return try JSONOutput.print(details) }
        let summary = details.summary
        print(
            TerminalStyle.pairs([
                ("account", "\(summary.email) (\(summary.id.canonicalString))"),
                ("name", TerminalText.printable(summary.displayName, keepingNewlines: false)),
                ("state", AccountListCommand.state(summary)),
                ("created", summary.createdAt.formatted(.iso8601)),
                ("disabled", summary.disabledAt.map { $0.formatted(.iso8601) } ?? "no"),
                ("sessions", "\(details.activeSessions) active"),
                (
                    "stored",
                    "\(byteCount(details.attachmentBytes)) of attachments, \(byteCount(details.backupBytes)) of backups"
                ),
                ("waiting", "\(details.waitingEntries) mailbox entries"),
                (
                    "signed in from",
                    details.signInAddresses.isEmpty
                        ? "nowhere yet" : details.signInAddresses.map(\.address).joined(separator: ", ")
                ),
            ]))
        guard !details.devices.isEmpty else { return print("no current devices") }
        print(
            TerminalStyle.table(
                ["DEVICE", "NAME", "REGISTERED", "LAST ACTIVE"],
                details.devices.map {
                    [
                        $0.id.canonicalString, $0.name.map { TerminalText.printable($0, keepingNewlines: false) } ?? "",
                        $0.registeredAt.formatted(.iso8601), $0.lastSeenAt.map { $0.formatted(.iso8601) } ?? "never",
                    ]
                }))
    }
}

struct AccountDisableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable",
        abstract: "Disable an account: its sessions and streams end now and it may not sign in; its data stays.")

    @OptionGroup var storage: RelayStorageOptions
    @Argument(help: "The account's e-mail address or id.") var account: String
    @Option(help: "Why, for the audit (at most 200 characters).") var reason: String?

    func run() async throws {
        let summary = try await withRelayAdministration(storage) {
            try await $0.disableAccount(account, reason: reason)
        }
        print("disabled \(summary.email); `confidant admin account enable \(summary.email)` undoes it")
    }
}

struct AccountEnableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable", abstract: "Let a disabled account sign in again.")

    @OptionGroup var storage: RelayStorageOptions
    @Argument(help: "The account's e-mail address or id.") var account: String

    func run() async throws {
        let summary = try await withRelayAdministration(storage) { try await $0.enableAccount(account) }
        print("enabled \(summary.email); its devices sign in again")
    }
}

struct AccountDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete an account and everything of it: devices, mailbox, attachments, backups, sign-in secrets.")

    @OptionGroup var storage: RelayStorageOptions
    @Argument(help: "The account's e-mail address or id.") var account: String
    @Flag(help: "Confirm: the deletion cannot be undone.") var yes = false

    func run() async throws {
        guard yes else {
            throw ValidationError("deleting \(account) cannot be undone; add --yes to confirm")
        }
        let summary = try await withRelayAdministration(storage) { try await $0.deleteAccount(account) }
        print("deleted \(summary.email) (\(summary.id.canonicalString)) and its \(summary.devices) devices")
    }
}

struct DeviceRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke-device",
        abstract: "Retire one device of an account: its sessions end and its waiting messages go.")

    @OptionGroup var storage: RelayStorageOptions
    @Argument(help: "The account's e-mail address or id.") var account: String
    @Argument(help: "The device's id, from `confidant admin account show`.") var device: String

    func run() async throws {
        guard let id = UUID(uuidString: device) else { throw ValidationError("\(device) is not a device id") }
        try await withRelayAdministration(storage) { try await $0.revokeDevice(id, of: account) }
        print("revoked device \(id.canonicalString) of \(account)")
    }
}
