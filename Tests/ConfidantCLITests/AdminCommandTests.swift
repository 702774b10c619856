import AsyncHTTPClient
import ConfidantTestSupport
import Foundation
import Testing

/// `confidant admin invite …` on a relay's data directory while the relay runs by invite only,
/// and `account register --invite` against it.
@Suite("Admin command")
struct AdminCommandTests {
    @Test("An operator's invite code signs one person up; without it, or used up, the CLI says why")
    func inviteSignUp() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let relayDirectory = cli.directory.appendingPathComponent("relay")
        let storage = ["--data-dir", relayDirectory.path]
        let created = try await cli.run(["admin", "invite", "create", "--uses", "1", "--expires", "2d"] + storage)
        #expect(created.status == 0, "\(created.stderr)")
        let code = try #require(
            created.text.split(separator: "\n").first { $0.hasPrefix("invite code: ") }?.dropFirst(13))
        #expect(code.count == 24)
        #expect(created.stderr.isEmpty, "no migration chatter: \(created.stderr)")

        let serve = try ServeProcess(dataDirectory: relayDirectory, extra: ["--registration", "invite"])
        defer { serve.kill(SIGTERM) }
        let relay = try await serve.relay()
        let server = relay.baseURL.absoluteString
        let refused = try await Self.refusedSignUp(cli, server: server, name: "nocode", extra: [])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("invite only"), "\(refused.stderr)")

        let joined = try await cli.register(
            profile: "ann", server: server, email: "ann@example.com", name: "Ann", password: "a long enough password",
            dataDirectory: relayDirectory, extra: ["--invite", String(code)])
        #expect(joined.status == 0, "\(joined.stderr)")
        let again = try await Self.refusedSignUp(cli, server: server, name: "bob", extra: ["--invite", String(code)])
        #expect(again.status != 0)
        #expect(again.stderr.contains("not valid"), "\(again.stderr)")

        let listed = try await cli.run(["admin", "invite", "list"] + storage)
        #expect(listed.text.contains("used up  used 1, 0 left"), "\(listed.text)")
        let id = try #require(listed.text.split(separator: " ").first.map(String.init))
        let revoked = try await cli.run(["admin", "invite", "revoke", id] + storage)
        #expect(revoked.status == 0 && revoked.text.contains("revoked invite \(id)"), "\(revoked.stderr)")
        let unknown = try await cli.run(["admin", "invite", "revoke", UUID().uuidString] + storage)
        #expect(unknown.status != 0 && unknown.stderr.contains("there is no invite"), "\(unknown.stderr)")
        let badExpiry = try await cli.run(["admin", "invite", "create", "--expires", "soon"] + storage)
        #expect(badExpiry.status != 0 && badExpiry.stderr.contains("--expires"), "\(badExpiry.stderr)")

        // An invite link: printed with --link-base, and taken whole as the server to sign up on.
        let badBase = try await cli.run(["admin", "invite", "create", "--link-base", "relay.example"] + storage)
        #expect(badBase.status != 0 && badBase.stderr.contains("--link-base"), "\(badBase.stderr)")
        let linked = try await cli.run(["admin", "invite", "create", "--link-base", server + "/"] + storage)
        let link = try #require(
            linked.text.split(separator: "\n").first { $0.hasPrefix("invite link: ") }.map { String($0.dropFirst(13)) })
        #expect(link.hasPrefix(server + "/join?code="), "\(link)")
        let page = try await HTTPClient.shared.execute(HTTPClientRequest(url: link), timeout: .minutes(1))
        #expect(page.status == .ok)
        let byLink = try await cli.register(
            profile: "cy", server: link, email: "cy@example.com", name: "Cy", password: "a long enough password",
            dataDirectory: relayDirectory)
        #expect(byLink.status == 0 && byLink.text.contains("on \(server)"), "\(byLink.stderr)")
    }

    @Test("An operator lists, shows, disables, enables and deletes an account while the relay runs; the audit has each")
    func accountActions() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let relayDirectory = cli.directory.appendingPathComponent("relay")
        let storage = ["--data-dir", relayDirectory.path]
        let serve = try ServeProcess(dataDirectory: relayDirectory)
        defer { serve.kill(SIGTERM) }
        let server = try await serve.relay().baseURL.absoluteString
        let joined = try await cli.register(
            profile: "ann", server: server, email: "ann@example.com", name: "Ann", password: "a long enough password",
            dataDirectory: relayDirectory)
        #expect(joined.status == 0, "\(joined.stderr)")

        let listed = try await cli.run(["admin", "account", "list", "--search", "ANN"] + storage)
        #expect(listed.status == 0 && listed.text.contains("ann@example.com") && listed.text.contains("active"))
        let shown = try await cli.run(["admin", "account", "show", "ann@example.com", "--json"] + storage)
        let details = try JSONSerialization.jsonObject(with: Data(shown.text.utf8)) as? [String: Any]
        #expect((details?["devices"] as? [Any])?.count == 1, "\(shown.text)")
        #expect(details?["activeSessions"] as? Int == 1, "\(shown.text)")

        let disabled = try await cli.run(
            ["admin", "account", "disable", "ann@example.com", "--reason", "asked to pause"] + storage)
        #expect(disabled.status == 0 && disabled.text.contains("disabled ann@example.com"), "\(disabled.stderr)")
        // The running relay reads other processes' revocations every second (SQLite has no NOTIFY):
        // the session stops working once it has, after a few tries at most.
        var devices = try await cli.run(["account", "devices", "--profile", "ann"])
        for _ in 0..<50 where devices.status == 0 {
            devices = try await cli.run(["account", "devices", "--profile", "ann"])
        }
        #expect(devices.status != 0 && devices.stderr.contains("no longer accepts"), "\(devices.stderr)")
        let login = try await cli.run(
            ["account", "login", "--profile", "ann", "--email", "ann@example.com", "--password-stdin"],
            answering: [{ "a long enough password" }])
        #expect(login.status != 0 && login.stderr.contains("disabled this account"), "\(login.stderr)")
        let again = try await cli.run(["admin", "account", "disable", "ann@example.com"] + storage)
        #expect(again.status != 0 && again.stderr.contains("disabled already"), "\(again.stderr)")
        let enabled = try await cli.run(["admin", "account", "enable", "ann@example.com"] + storage)
        #expect(enabled.status == 0, "\(enabled.stderr)")

        let stats = try await cli.run(["admin", "stats", "--json"] + storage)
        let counts = try JSONSerialization.jsonObject(with: Data(stats.text.utf8)) as? [String: Any]
        #expect(counts?["accounts"] as? Int == 1 && counts?["disabledAccounts"] as? Int == 0, "\(stats.text)")
        let unconfirmed = try await cli.run(["admin", "account", "delete", "ann@example.com"] + storage)
        #expect(unconfirmed.status != 0 && unconfirmed.stderr.contains("--yes"), "\(unconfirmed.stderr)")
        let deleted = try await cli.run(["admin", "account", "delete", "ann@example.com", "--yes"] + storage)
        #expect(deleted.status == 0 && deleted.text.contains("deleted ann@example.com"), "\(deleted.stderr)")
        let gone = try await cli.run(["admin", "account", "show", "ann@example.com"] + storage)
        #expect(gone.status != 0 && gone.stderr.contains("There is no account ann@example.com"), "\(gone.stderr)")

        let audit = try await cli.run(["admin", "audit"] + storage)
        let actions = audit.text.split(separator: "\n").dropFirst().map {
            $0.contains("account delete") ? "delete" : $0.contains("account enable") ? "enable" : "disable"
        }
        #expect(actions == ["delete", "enable", "disable"], "\(audit.text)")
        #expect(audit.text.contains("asked to pause") && audit.text.contains("cli "), "\(audit.text)")
    }

    @Test("admin token writes a 0600 token file once; serve takes it only with the metrics listener")
    func adminToken() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let file = cli.directory.appendingPathComponent("admin-token").path
        let made = try await cli.run(["admin", "token", "--out", file])
        #expect(made.status == 0 && made.text.contains("--admin-token-file \(file)"), "\(made.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let token = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 43 && !made.text.contains(token), "the token is not printed")
        let again = try await cli.run(["admin", "token", "--out", file])
        #expect(again.status != 0 && again.stderr.contains("exists already"), "\(again.stderr)")
        let serve = try await cli.run(["serve", "--port", "0", "--admin-token-file", file])
        #expect(serve.status != 0 && serve.stderr.contains("--metrics-port"), "\(serve.stderr)")
    }

    @Test("admin backup copies a running relay; admin restore puts it in a new data directory a relay serves")
    func backupAndRestore() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let relayDirectory = cli.directory.appendingPathComponent("relay")
        let serve = try ServeProcess(dataDirectory: relayDirectory)
        defer { serve.kill(SIGTERM) }
        let server = try await serve.relay().baseURL.absoluteString
        let joined = try await cli.register(
            profile: "ann", server: server, email: "ann@example.com", name: "Ann", password: "a long enough password",
            dataDirectory: relayDirectory)
        #expect(joined.status == 0, "\(joined.stderr)")

        let out = cli.directory.appendingPathComponent("backup").path
        let made = try await cli.run(["admin", "backup", "--out", out, "--data-dir", relayDirectory.path])
        #expect(made.status == 0 && made.text.contains("backed up the relay to \(out)"), "\(made.stderr)")
        let again = try await cli.run(["admin", "backup", "--out", out, "--data-dir", relayDirectory.path])
        #expect(again.status != 0 && again.stderr.contains("is not empty"), "\(again.stderr)")

        let restoredDirectory = cli.directory.appendingPathComponent("restored").path
        let restored = try await cli.run(["admin", "restore", "--from", out, "--data-dir", restoredDirectory])
        #expect(restored.status == 0 && restored.text.contains("confidant serve --data-dir"), "\(restored.stderr)")
        let twice = try await cli.run(["admin", "restore", "--from", out, "--data-dir", restoredDirectory])
        #expect(twice.status != 0 && twice.stderr.contains("exists already"), "\(twice.stderr)")
        let notBackup = try await cli.run(["admin", "restore", "--from", relayDirectory.path, "--data-dir", out + "x"])
        #expect(
            notBackup.status != 0 && notBackup.stderr.contains("not a finished relay backup"), "\(notBackup.stderr)")

        let second = try ServeProcess(dataDirectory: URL(fileURLWithPath: restoredDirectory))
        defer { second.kill(SIGTERM) }
        _ = try await second.relay()
        let listed = try await cli.run(["admin", "account", "list", "--data-dir", restoredDirectory])
        #expect(listed.status == 0 && listed.text.contains("ann@example.com"), "\(listed.text)")
        let audit = try await cli.run(["admin", "audit", "--data-dir", relayDirectory.path])
        #expect(audit.text.contains("backup"), "\(audit.text)")
        let help = try await cli.run(["help", "admin"])
        #expect(help.text.contains("backup") && help.text.contains("restore"), "\(help.text)")
    }

    /// `account register` that the relay refuses before any code is mailed: only the password is typed.
    static func refusedSignUp(_ cli: CLIProcess, server: String, name: String, extra: [String]) async throws
        -> CLIProcess.Result
    {
        try await cli.run(
            [
                "account", "register", "--profile", name, "--server", server, "--email", "\(name)@example.com",
                "--name", name, "--password-stdin", "--scrypt-log2n", "10",
            ] + extra, answering: [{ "a long enough password" }])
    }
}
