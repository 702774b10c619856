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
