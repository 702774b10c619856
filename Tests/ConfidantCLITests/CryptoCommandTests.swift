import Foundation
import Testing

@Suite struct CryptoCommandTests {
    @Test func keygenWritesPrivateFile0600AndPublicPEM() throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let result = try cli.run(["crypto", "keygen", "--out", "me.key", "--scrypt-log2n", "10"])
        #expect(result.status == 0, "\(result.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: cli.directory.appendingPathComponent("me.key").path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let pem = try String(contentsOf: cli.directory.appendingPathComponent("me.key.pub"), encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN CONFIDANT PUBLIC IDENTITY-----"))
        let again = try cli.run(["crypto", "keygen", "--out", "me.key", "--scrypt-log2n", "10"])
        #expect(again.status != 0)
        #expect(again.stderr.contains("already exists"))
    }

    @Test func sealOpenAndClearErrors() throws {
        var cli = try CLIProcess()
        defer { cli.remove() }
        try cli.makeIdentities("alice", "bob")
        let sealed = try cli.run(["crypto", "seal", "--key", "alice.key", "--to", "bob.key.pub"], stdin: Data("hi bob".utf8))
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let opened = try cli.run(["crypto", "open", "--key", "bob.key", "--from", "alice.key.pub"], stdin: sealed.stdout)
        #expect(opened.text == "hi bob")

        let wrongRecipient = try cli.run(["crypto", "open", "--key", "alice.key", "--from", "alice.key.pub"], stdin: sealed.stdout)
        #expect(wrongRecipient.status != 0)
        #expect(wrongRecipient.stderr.contains("not to this device"))

        let truncated = try cli.run(["crypto", "open", "--key", "bob.key", "--from", "alice.key.pub"], stdin: sealed.stdout.prefix(40))
        #expect(truncated.stderr.contains("truncated"))

        cli.environment["CONFIDANT_PASSPHRASE"] = "not it"
        let wrongPassphrase = try cli.run(["crypto", "open", "--key", "bob.key", "--from", "alice.key.pub"], stdin: sealed.stdout)
        #expect(wrongPassphrase.stderr.contains("wrong passphrase"))
        #expect(wrongPassphrase.stdout.isEmpty)
    }

    @Test func seedLegacyMustBeNamedAndWarns() throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        try cli.makeIdentities("alice", "bob")
        let defaultSuite = try cli.run(["crypto", "seal", "--key", "alice.key", "--to", "bob.key.pub"], stdin: Data("x".utf8))
        #expect(!defaultSuite.stderr.contains("warning"))
        let inspect = try cli.run(["crypto", "inspect"], stdin: defaultSuite.stdout)
        #expect(inspect.text.contains("p256-aes256gcm"))

        let legacy = try cli.run(
            ["crypto", "seal", "--key", "alice.key", "--to", "bob.key.pub", "--suite", "seed-legacy"], stdin: Data("x".utf8))
        #expect(legacy.status == 0)
        #expect(legacy.stderr.contains("warning: suite seed-legacy has no integrity protection"))
    }

    @Test func sblockKnownAnswerThroughTheCLI() throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let result = try cli.run(["crypto", "sblock", "--key", "key8"], stdin: Data("Привет мир!".utf8))
        #expect(Array(result.stdout) == [255, 121, 158, 69, 160, 140, 234, 92, 92, 101, 140, 8, 20, 46, 207, 185, 250, 74, 239, 179])
        let empty = try cli.run(["crypto", "sblock", "--key", ""], stdin: Data("x".utf8))
        #expect(empty.status != 0)
        #expect(empty.stderr.contains("at least one byte"))
    }

    /// docs/PROTOCOL.md implemented independently in Python (pyhpke + cryptography): each side
    /// opens what the other sealed, for every suite. Needs `pip install -r Tests/Interop/requirements.txt`.
    @Test func independentPythonImplementationInteroperates() throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let script = CLIProcess.packageRoot.appendingPathComponent("Tests/Interop/interop.py").path
        let result = try cli.run(["python3", script, try CLIProcess.executable.path], executable: URL(fileURLWithPath: "/usr/bin/env"))
        let summary = result.text.split(separator: "\n").last.map(String.init) ?? ""
        #expect(result.status == 0, "\(result.text)\n\(result.stderr)")
        #expect(summary.hasSuffix(" 0 failed"), "\(summary)")
    }
}

@Suite struct CipherCommandTests {
    @Test func analyzeWritesAReport() throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let result = try cli.run(["cipher", "analyze", "--bytes", "2048", "--keys", "4", "--bias-keys", "512", "--report", "lab"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.contains("S-block (seed 000)"))
        let report = try String(contentsOf: cli.directory.appendingPathComponent("lab/report.md"), encoding: .utf8)
        #expect(report.contains("## Verdicts"))
        let bad = try cli.run(["cipher", "analyze", "--algorithm", "rc4", "--report", "lab"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("rc4"))
    }

    @Test func reuseAttackOnSeedLegacyEnvelopes() throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        try cli.makeIdentities("alice", "bob")
        let known = String(repeating: "This is a message Alice sent earlier; the attacker knows it. ", count: 20)
        let secret = String(repeating: "The vault code is 4711, tell nobody about the code at all! ", count: 20)
        try Data(known.utf8).write(to: cli.directory.appendingPathComponent("known.txt"))
        for (name, text) in [("one.env", known), ("two.env", secret)] {
            let sealed = try cli.run(
                ["crypto", "seal", "--key", "alice.key", "--to", "bob.key.pub", "--suite", "seed-legacy", "--out", name],
                stdin: Data(text.utf8))
            #expect(sealed.status == 0, "\(sealed.stderr)")
        }
        let recovered = try cli.run(["cipher", "attack", "reuse", "one.env", "two.env", "--known", "known.txt"])
        #expect(recovered.text == secret)

        let dragged = try cli.run(["cipher", "attack", "reuse", "one.env", "two.env", "--crib", "message"])
        #expect(dragged.text.contains("crib \"message\""))

        let modern = try cli.run(["crypto", "seal", "--key", "alice.key", "--to", "bob.key.pub", "--out", "aead.env"], stdin: Data("x".utf8))
        #expect(modern.status == 0)
        let refused = try cli.run(["cipher", "attack", "reuse", "aead.env", "two.env"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("keystream reuse does not apply"))
    }
}
