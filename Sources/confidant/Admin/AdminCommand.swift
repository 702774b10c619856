import ArgumentParser
import ConfidantKit
import ConfidantServer
import Foundation
import Logging

/// `confidant admin …`: the operator's actions on a relay's database (the server may be running).
struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: "Administer a relay: accounts, invites, statistics, the audit, backups.",
        discussion:
            "Works on the server's database directly: give the same --database, --data-dir and --auth-key-file as `serve`.",
        subcommands: [
            AccountAdminCommand.self, InviteCommand.self, StatsCommand.self, AuditCommand.self, AdminTokenCommand.self,
            RelayBackupCommand.self, RelayRestoreCommand.self,
        ])
}

/// `confidant admin invite create|list|revoke`.
struct InviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite", abstract: "Make, list and revoke invite codes (`serve --registration invite`).",
        subcommands: [InviteCreateCommand.self, InviteListCommand.self, InviteRevokeCommand.self])
}

/// Opens the relay's database without listening, runs `body`, and closes it.
func withRelayAdministration<T>(
    _ storage: RelayStorageOptions, _ body: (RelayAdministration) async throws -> T
) async throws -> T {
    // Migrations and the like are not news to an operator running one command.
    var logger = Logger(label: "confidant.admin")
    logger.logLevel = .warning
    let relay = try await RelayServer(configuration: try storage.configuration(), logger: logger)
    do {
        let result = try await body(relay.administration(as: "cli \(ProcessInfo.processInfo.userName)"))
        await relay.shutdown()
        return result
    } catch {
        await relay.shutdown()
        throw error
    }
}

struct InviteCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Make an invite code; it is shown only now.")

    @OptionGroup var storage: RelayStorageOptions
    @Option(help: "How many sign-ups the code allows (1…10000).") var uses = 1
    @Option(help: "How long the code stays valid: hours (12h), days (7d) or weeks (2w); one hour to a year.")
    var expires = "7d"
    @Option(help: "The server's address as people reach it (https://relay.example): also print an invite link.")
    var linkBase: String?

    func run() async throws {
        guard let lifetime = Self.lifetime(expires) else {
            throw ValidationError("--expires takes a number and h, d or w, e.g. 12h, 7d or 2w")
        }
        let base = linkBase.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        if let base, InviteLink("\(base)/join?code=CHECK")?.server != base {
            throw ValidationError("--link-base takes the server's address alone, e.g. https://relay.example")
        }
        let (code, invite) = try await withRelayAdministration(storage) {
            try await $0.createInvite(uses: uses, lifetime: lifetime)
        }
        let until = invite.expiresAt.map { $0.formatted(.iso8601) } ?? "never"
        print("invite code: \(code)")
        print(
            "for \(uses == 1 ? "one sign-up" : "\(uses) sign-ups"), valid until \(until) (id \(invite.id.uuidString.lowercased())); it is not shown again"
        )
        print("sign up with it: confidant account register --invite \(code) …")
        if let base { print("invite link: \(base)/join?code=\(code)") }
    }

    /// `12h`, `7d`, `2w` in seconds; nil for anything else.
    static func lifetime(_ text: String) -> TimeInterval? {
        guard let unit = text.last, let count = Int(text.dropLast()), count > 0, count <= 10_000 else { return nil }
        switch unit {
        case "h": return TimeInterval(count) * 3_600
        case "d": return TimeInterval(count) * 86_400
        case "w": return TimeInterval(count) * 7 * 86_400
        default: return nil
        }
    }
}

struct InviteListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List invites, newest first.")

    @OptionGroup var storage: RelayStorageOptions

    func run() async throws {
        let invites = try await withRelayAdministration(storage) { try await $0.listInvites() }
        guard !invites.isEmpty else {
            print("no invites; make one with `confidant admin invite create`")
            return
        }
        for invite in invites {
            let until = invite.expiresAt.map { $0.formatted(.iso8601) } ?? "never"
            print(
                "\(invite.id.uuidString.lowercased())  \(invite.state.rawValue)  used \(invite.used), \(invite.usesLeft) left  made \(invite.createdAt.formatted(.iso8601))  expires \(until)"
            )
        }
    }
}

struct InviteRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Revoke an invite: its code signs nobody up any more.")

    @OptionGroup var storage: RelayStorageOptions
    @Argument(help: "The invite's id, from `confidant admin invite list`.") var id: String

    func run() async throws {
        guard let invite = UUID(uuidString: id) else { throw ValidationError("\(id) is not an invite id") }
        guard try await withRelayAdministration(storage, { try await $0.revokeInvite(invite) }) else {
            throw ValidationError("there is no invite \(id); see `confidant admin invite list`")
        }
        print("revoked invite \(id)")
    }
}

/// `confidant admin token --out FILE`.
struct AdminTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Make the token file of the HTTP admin API (`serve --admin-token-file`).")

    @Option(help: "The new file (made 0600; an existing one is not replaced).") var out: String

    func run() async throws {
        do {
            _ = try AdminTokenFile.create(at: URL(fileURLWithPath: out))
        } catch {
            throw ValidationError("\(error)")
        }
        print(
            "wrote a new admin token to \(out); start `confidant serve --metrics-port PORT --admin-token-file \(out)`")
        print("and call http://127.0.0.1:PORT/admin/v1/… with `Authorization: Bearer` and the file's line")
    }
}
