import Foundation
import Testing

/// What the CLI tells a user to run next names the profile they are using, and a vault with a
/// passphrase of its own backs up to the profile's server with the profile's passphrase.
@Suite("Advice that names the profile, and the profile's passphrase beside the vault's")
struct ProfileAdviceTests {
    @Test("advice after an error names the profile in use, quoted for the shell when it needs it")
    func adviceNamesTheProfile() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let notSignedIn = try await cli.run(["inbox", "--profile", "nobody"])
        #expect(notSignedIn.status != 0)
        #expect(
            notSignedIn.stderr.contains(
                "run `confidant account register --profile nobody` or `confidant account login --profile nobody`"),
            "\(notSignedIn.stderr)")
        // The default profile needs no flag.
        let byDefault = try await cli.run(["inbox"])
        #expect(byDefault.stderr.contains("run `confidant account register` or `confidant account login`"))
        let noVault = try await cli.run(["vault", "list", "--profile", "my vault"])
        #expect(noVault.status != 0)
        #expect(noVault.stderr.contains("run `confidant vault init --profile 'my vault'` first"), "\(noVault.stderr)")
        #expect(try await cli.run(["vault", "init", "--profile", "my vault", "--scrypt-log2n", "10"]).status == 0)
        let noChapters = try await cli.run(["vault", "chapter", "list", "--profile", "my vault"])
        #expect(
            noChapters.text.contains("add one with `confidant vault chapter add --profile 'my vault' TITLE`"),
            "\(noChapters.text)")
    }

    @Test("chat verify and the new-device notice suggest commands for the same profile")
    func hintsNameTheProfile() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        let verify = try await cli.run(["chat", "verify", "--profile", "alice", served.bob])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(
            verify.text.contains("run `confidant chat verify --profile alice \(served.bob) --mark`"), "\(verify.text)")
        let unknown = try await cli.run(["send", "--profile", "alice", "nobody@example.com", "hello"])
        #expect(unknown.status != 0)
        #expect(
            unknown.stderr.contains("`confidant chat users --profile alice --search NAME` lists who is there"),
            "\(unknown.stderr)")
        let notADevice = try await cli.run(["account", "devices", "--profile", "alice", "--remove", "lost-phone"])
        #expect(notADevice.status != 0)
        #expect(
            notADevice.stderr.contains(
                "lost-phone is not a device id; `confidant account devices --profile alice` lists"),
            "\(notADevice.stderr)")
        let marked = try await cli.run(["chat", "verify", "--profile", "alice", served.bob, "--mark"])
        #expect(marked.text.contains("marked verified"), "\(marked.stderr)")

        // A second device of Bob's: his first device is told, with the commands for its profile.
        try await ChatCommandTests.loginOnTerminal(
            cli,
            [
                "account", "login", "--profile", "bob-tablet", "--server", "http://127.0.0.1:\(served.port)",
                "--email", served.bob, "--password-stdin", "--scrypt-log2n", "10",
            ],
            password: "password of Bob", dataDirectory: served.dataDirectory)
        let inbox = try await cli.run(["inbox", "--profile", "bob"])
        #expect(inbox.stderr.contains("A new device ("), "\(inbox.stderr)")
        #expect(
            inbox.stderr.contains(
                "your devices: `confidant account devices --profile bob`; remove one: `confidant account devices --profile bob --remove ID`"
            ), "\(inbox.stderr)")
    }

    @Test("a vault with its own passphrase backs up to the profile's server and restores from it")
    func vaultOnTheServerWithTwoPassphrases() async throws {
        var cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        // The profiles were made with "test passphrase" (CLIProcess); the vault gets its own.
        cli.environment["CONFIDANT_PASSPHRASE"] = "vault passphrase"
        #expect(try await cli.run(["vault", "init", "--profile", "alice", "--scrypt-log2n", "10"]).status == 0)
        #expect(try await cli.run(["vault", "chapter", "add", "--profile", "alice", "Winter"]).status == 0)
        let added = try await cli.run([
            "vault", "add", "--profile", "alice", "--chapter", "Winter", "--text", "Snow on the roofs",
        ])
        #expect(added.status == 0, "\(added.stderr)")

        // The vault's passphrase does not open the profile's key: the error says which one is wanted.
        let refused = try await cli.run(["vault", "backup", "--profile", "alice", "--to", "server"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("the profile's passphrase is needed"), "\(refused.stderr)")
        #expect(refused.stderr.contains("CONFIDANT_PROFILE_PASSPHRASE"))

        // A wrong profile passphrase given as the profile's own is named plainly.
        cli.environment["CONFIDANT_PROFILE_PASSPHRASE"] = "not the profile's"
        let wrong = try await cli.run(["vault", "backup", "--profile", "alice", "--to", "server"])
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("wrong passphrase"), "\(wrong.stderr)")

        cli.environment["CONFIDANT_PROFILE_PASSPHRASE"] = "test passphrase"
        let backedUp = try await cli.run(["vault", "backup", "--profile", "alice", "--to", "server"])
        #expect(backedUp.status == 0, "\(backedUp.stderr)")
        #expect(backedUp.text.contains("backed up to the Confidant server"), "\(backedUp.text)")

        // Restored from the server into another directory, the profile's passphrase from a file.
        cli.environment["CONFIDANT_PROFILE_PASSPHRASE"] = nil
        try Data("test passphrase\n".utf8).write(to: cli.directory.appendingPathComponent("profile-passphrase"))
        let restored = try await cli.run([
            "vault", "restore", "--profile", "alice", "--vault-dir", "restored", "--from", "server",
            "--profile-passphrase-file", "profile-passphrase",
        ])
        #expect(restored.status == 0, "\(restored.stderr)")
        let listed = try await cli.run(["vault", "list", "--profile", "alice", "--vault-dir", "restored"])
        #expect(listed.text.contains("Snow on the roofs"), "\(listed.stderr)")
    }
}
