import Foundation
import Testing

@Suite struct CryptoCommandTests {
    @Test func keygenWritesPrivateFile0600AndPublicPEM() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let result = try await cli.run(["keys", "generate", "--out", "me.key", "--scrypt-log2n", "10"])
        #expect(result.status == 0, "\(result.stderr)")
        let attributes = try FileManager.default.attributesOfItem(
            atPath: cli.directory.appendingPathComponent("me.key").path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let pem = try String(contentsOf: cli.directory.appendingPathComponent("me.key.pub"), encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN CONFIDANT PUBLIC IDENTITY-----"))
        #expect(pem.hasSuffix("-----END CONFIDANT PUBLIC IDENTITY-----\n"), "a text file ends with a newline")
        let again = try await cli.run(["keys", "generate", "--out", "me.key", "--scrypt-log2n", "10"])
        #expect(again.status != 0)
        #expect(again.stderr.contains("already exists"))
    }

    @Test func sealOpenAndClearErrors() async throws {
        var cli = try CLIProcess()
        defer { cli.remove() }
        try await cli.makeIdentities("alice", "bob")
        let sealed = try await cli.run(
            ["keys", "seal", "--from", "alice.key", "--to", "bob.key.pub"], stdin: Data("hi bob".utf8))
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let opened = try await cli.run(
            ["keys", "open", "--with", "bob.key", "--from", "alice.key.pub"], stdin: sealed.stdout)
        #expect(opened.text == "hi bob")

        let wrongRecipient = try await cli.run(
            ["keys", "open", "--with", "alice.key", "--from", "alice.key.pub"], stdin: sealed.stdout)
        #expect(wrongRecipient.status != 0)
        #expect(wrongRecipient.stderr.contains("not to this device"))

        let truncated = try await cli.run(
            ["keys", "open", "--with", "bob.key", "--from", "alice.key.pub"], stdin: sealed.stdout.prefix(40))
        #expect(truncated.stderr.contains("truncated"))

        cli.environment["CONFIDANT_PASSPHRASE"] = "not it"
        let wrongPassphrase = try await cli.run(
            ["keys", "open", "--with", "bob.key", "--from", "alice.key.pub"], stdin: sealed.stdout)
        #expect(wrongPassphrase.stderr.contains("wrong passphrase"))
        #expect(wrongPassphrase.stdout.isEmpty)
    }

    @Test func seedLegacyMustBeNamedAndWarns() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        try await cli.makeIdentities("alice", "bob")
        let defaultSuite = try await cli.run(
            ["keys", "seal", "--from", "alice.key", "--to", "bob.key.pub"], stdin: Data("x".utf8))
        #expect(!defaultSuite.stderr.contains("warning"))
        let inspect = try await cli.run(["keys", "inspect"], stdin: defaultSuite.stdout)
        #expect(inspect.text.contains("p256-aesgcm"))

        let legacy = try await cli.run(
            ["keys", "seal", "--from", "alice.key", "--to", "bob.key.pub", "--suite", "seed-legacy"],
            stdin: Data("x".utf8))
        #expect(legacy.status == 0)
        #expect(legacy.stderr.contains("warning: suite seed-legacy has no integrity protection"))
    }

    @Test func sblockKnownAnswerThroughTheCLI() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let result = try await cli.run(
            ["lab", "encrypt", "--algorithm", "sblock", "--key", "key8"], stdin: Data("Привет мир!".utf8))
        #expect(
            Array(result.stdout) == [
                255, 121, 158, 69, 160, 140, 234, 92, 92, 101, 140, 8, 20, 46, 207, 185, 250, 74, 239, 179,
            ])
        let empty = try await cli.run(["lab", "encrypt", "--algorithm", "sblock", "--key", ""], stdin: Data("x".utf8))
        #expect(empty.status != 0)
        #expect(empty.stderr.contains("at least one byte"))
    }

    /// docs/PROTOCOL.md implemented independently in Python (pyhpke + cryptography): each side
    /// opens what the other sealed, for every suite. Needs `pip install -r Tests/Interop/requirements.txt`.
    @Test func independentPythonImplementationInteroperates() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let script = CLIProcess.packageRoot.appendingPathComponent("Tests/Interop/interop.py").path
        let result = try await cli.run(
            ["python3", script, try CLIProcess.executable.path], executable: URL(fileURLWithPath: "/usr/bin/env"))
        let summary = result.text.split(separator: "\n").last.map(String.init) ?? ""
        #expect(result.status == 0, "\(result.text)\n\(result.stderr)")
        #expect(summary.hasSuffix(" 0 failed"), "\(summary)")
    }

    /// docs/PROTOCOL.md §6 implemented independently in Python: it reads every part of a backup
    /// the CLI made (manifest v2, wrapped key, catalogue, sealed texts, media objects and their
    /// addresses) and writes a backup from scratch that the CLI restores and exports byte for byte.
    @Test func pythonReadsAndWritesVaultBackups() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let script = CLIProcess.packageRoot.appendingPathComponent("Tests/Interop/vault_interop.py").path
        let result = try await cli.run(
            ["python3", script, try CLIProcess.executable.path], executable: URL(fileURLWithPath: "/usr/bin/env"))
        let summary = result.text.split(separator: "\n").last.map(String.init) ?? ""
        #expect(result.status == 0, "\(result.text)\n\(result.stderr)")
        #expect(summary.hasPrefix("vault_interop: ") && summary.hasSuffix(" 0 failed"), "\(summary)")
    }
}

@Suite struct CipherCommandTests {
    @Test func analyzeWritesAReport() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let result = try await cli.run([
            "lab", "analyze", "--bytes", "2048", "--keys", "4", "--bias-keys", "512", "--report", "lab",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.text.contains("S-block (seed 000)"))
        let report = try String(contentsOf: cli.directory.appendingPathComponent("lab/report.md"), encoding: .utf8)
        #expect(report.contains("## Verdicts"))
        let bad = try await cli.run(["lab", "analyze", "--algorithm", "rc4", "--report", "lab"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("rc4"))
    }

    @Test func reuseAttackOnSeedLegacyEnvelopes() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        try await cli.makeIdentities("alice", "bob")
        let known = String(repeating: "This is a message Alice sent earlier; the attacker knows it. ", count: 20)
        let secret = String(repeating: "The vault code is 4711, tell nobody about the code at all! ", count: 20)
        try Data(known.utf8).write(to: cli.directory.appendingPathComponent("known.txt"))
        for (name, text) in [("one.env", known), ("two.env", secret)] {
            let sealed = try await cli.run(
                [
                    "keys", "seal", "--from", "alice.key", "--to", "bob.key.pub", "--suite", "seed-legacy", "--out",
                    name,
                ],
                stdin: Data(text.utf8))
            #expect(sealed.status == 0, "\(sealed.stderr)")
        }
        let recovered = try await cli.run(["lab", "attack", "reuse", "one.env", "two.env", "--known", "known.txt"])
        #expect(recovered.text == secret)

        let dragged = try await cli.run(["lab", "attack", "reuse", "one.env", "two.env", "--crib", "message"])
        #expect(dragged.text.contains("crib \"message\""))

        let modern = try await cli.run(
            ["keys", "seal", "--from", "alice.key", "--to", "bob.key.pub", "--out", "aead.env"], stdin: Data("x".utf8))
        #expect(modern.status == 0)
        let refused = try await cli.run(["lab", "attack", "reuse", "aead.env", "two.env"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("keystream reuse does not apply"))
    }
}

@Suite struct RawCipherAndKeyStringTests {
    @Test func aeadEncryptDecryptAndTamper() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let key = String(repeating: "ab", count: 32)
        for algorithm in ["aes-gcm", "chacha20-poly1305"] {
            let sealed = try await cli.run(
                ["lab", "encrypt", "--algorithm", algorithm, "--key-hex", key], stdin: Data("secret bytes".utf8))
            #expect(sealed.status == 0, "\(sealed.stderr)")
            #expect(sealed.stdout.count == 12 + 12 + 16)
            let opened = try await cli.run(
                ["lab", "decrypt", "--algorithm", algorithm, "--key-hex", key], stdin: sealed.stdout)
            #expect(opened.text == "secret bytes")
            var tampered = sealed.stdout
            tampered[20] ^= 1
            let refused = try await cli.run(
                ["lab", "decrypt", "--algorithm", algorithm, "--key-hex", key], stdin: tampered)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("authentication failed"))
        }
        let short = try await cli.run(
            ["lab", "encrypt", "--algorithm", "aes-gcm", "--key-hex", "abcd"], stdin: Data("x".utf8))
        #expect(short.stderr.contains("needs a 32-byte key"))
    }

    @Test func seedLegacyWithKeyStringsRoundTrips() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        // The fixed seed-format keys of SeedFormatTests (computed with Python's cryptography).
        let alicePrivate = "Hy49TFtqeYgBAgMEBQYHCAkKCwwNDg8QERITFBUWFxg%3D"
        let alicePublic =
            "lFuvv%2BSbv%2F5cM9Sc0IPadc6AWq8fKoLPsBDgloFjWCpA9%2FaSoyUGniLMD%2BBMDmgyL0RZ5FEG1UMl7iO4xmvRhA%3D%3D"
        let bobPrivate = "C63A%2F%2B4N3wDRI0VniQq83vASNFZ4mrze8BI0VniavN4%3D"
        let bobPublic =
            "7Al3SzIN5mI4zSo0mvBsS%2BaQbQYlAQIr7aEMbA%2FpUyd%2BG%2FbGJEJuqnlVqDUW5II%2BnRNnHqP38tR7rrmgiZHPRg%3D%3D"
        let sealed = try await cli.run(
            [
                "keys", "seal", "--suite", "seed-legacy", "--from-private-key", alicePrivate, "--to-public-key",
                bobPublic,
            ],
            stdin: Data("Привет мир!".utf8))
        #expect(sealed.status == 0, "\(sealed.stderr)")
        #expect(sealed.stdout.count == "Привет мир!".utf8.count)
        #expect(sealed.stderr.contains("warning"))
        let opened = try await cli.run(
            [
                "keys", "open", "--suite", "seed-legacy", "--with-private-key", bobPrivate, "--from-public-key",
                alicePublic,
            ], stdin: sealed.stdout)
        #expect(opened.text == "Привет мир!")
        let mixed = try await cli.run(
            ["keys", "seal", "--from-private-key", alicePrivate, "--to-public-key", bobPublic], stdin: Data())
        #expect(mixed.status != 0)
        #expect(mixed.stderr.contains("seed-legacy"))
        let badKey = try await cli.run(
            ["keys", "seal", "--suite", "seed-legacy", "--from-private-key", "AAAA", "--to-public-key", bobPublic],
            stdin: Data("x".utf8))
        #expect(badKey.status != 0)
        #expect(badKey.stderr.contains("the key has 3 bytes, expected 32"))
    }

    @Test func fingerprintOfOneAndTwoKeys() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        try await cli.makeIdentities("alice", "bob")
        #expect(try await cli.run(["keys", "fingerprint", "alice.key.pub"]).text.contains("fingerprint:"))
        let ab = try await cli.run(["keys", "fingerprint", "alice.key.pub", "bob.key.pub"]).text
        let ba = try await cli.run(["keys", "fingerprint", "bob.key.pub", "alice.key.pub"]).text
        #expect(ab == ba)
        #expect(ab.filter(\.isNumber).count == 60)
        let spki = try await cli.run(["keys", "public", "alice.key", "--format", "spki"]).text
        #expect(spki.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        let garbage = try await cli.run(["keys", "fingerprint", "alice.key"])
        #expect(garbage.status != 0)
        #expect(garbage.stderr.contains("PEM"))
    }
}
