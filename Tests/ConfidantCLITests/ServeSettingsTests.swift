import ConfidantTestSupport
import Foundation
import Testing

/// `serve --config FILE`, `CONFIDANT_*` variables and `--check-config`: every option of `serve`
/// is a setting, flags win over variables and variables over the file, and a mistake names the
/// file's line.
@Suite("Serve settings")
struct ServeSettingsTests {
    @Test("--check-config lists every option with its value and source: flag over variable over file")
    func precedence() async throws {
        var cli = try CLIProcess()
        defer { cli.remove() }
        let file = cli.directory.appendingPathComponent("relay.yaml")
        try """
        # A relay for a club.
        port: 9000
        metrics:
          port: 9464
        trusted-proxy:
          - 10.0.0.0/8
          - 127.0.0.1
        smtp:
          require-tls: true
        database: postgres://confidant:hunter2-secret@db.internal/confidant
        log-level: warning
        """.write(to: file, atomically: true, encoding: .utf8)
        cli.environment["CONFIDANT_PORT"] = "9001"
        cli.environment["CONFIDANT_LOG_LEVEL"] = "debug"
        let checked = try await cli.run(["serve", "--config", file.path, "--check-config", "--port", "9002"])
        #expect(checked.status == 0, "\(checked.stderr)")
        let lines = Dictionary(
            checked.text.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: " ", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), parts[1].trimmingCharacters(in: .whitespaces)) : nil
            }, uniquingKeysWith: { first, _ in first })
        #expect(lines["port"] == "9002  (command line)")
        #expect(lines["log-level"] == "debug  (CONFIDANT_LOG_LEVEL)")
        #expect(lines["metrics-port"] == "9464  (\(file.path):4)")
        #expect(lines["trusted-proxy"] == "10.0.0.0/8, 127.0.0.1  (\(file.path):5)")
        #expect(lines["smtp-require-tls"] == "true  (\(file.path):9)")
        #expect(lines["registration"] == "open  (default)")
        #expect(lines["database"]?.contains("***") == true && !checked.text.contains("hunter2"), "\(checked.text)")

        // Every option serve takes is a setting the check prints.
        let help = try await cli.run(["serve", "--experimental-dump-help"])
        let names = try Self.longOptions(help.stdout).subtracting(["config", "check-config", "help", "version"])
        #expect(names.count > 25)
        #expect(names.subtracting(lines.keys).isEmpty, "not printed: \(names.subtracting(lines.keys))")
    }

    @Test("unknown keys, bad values and malformed files are refused, naming the file's line")
    func mistakes() async throws {
        var cli = try CLIProcess()
        defer { cli.remove() }
        let cases: [(String, String)] = [
            ("port: 1\nmetrics:\n  prot: 5\n", "relay.yaml:3: unknown setting `metrics-prot`"),
            ("max-attachment-mib: 99999\n", "between 1 and 4096. (`max-attachment-mib` is set at "),
            ("port: 1\nport: abc\n", "duplicated key"),
            ("port: abc\n", "The value 'abc' is invalid for '--port <port>' (`port` is set at "),
            ("port: [1, 2]\n", "relay.yaml:1: `port` takes one value, not a list"),
            ("smtp-require-tls: maybe\n", "relay.yaml:1: `smtp-require-tls` is on or off"),
            ("- port\n", "relay.yaml:1: the settings are a mapping"),
            ("{{{", "not valid YAML"),
        ]
        let file = cli.directory.appendingPathComponent("relay.yaml")
        for (text, expected) in cases {
            try text.write(to: file, atomically: true, encoding: .utf8)
            let refused = try await cli.run(["serve", "--config", file.path, "--check-config"])
            #expect(refused.status != 0 && refused.stderr.contains(expected), "\(text): \(refused.stderr)")
        }
        let missing = try await cli.run(["serve", "--config", "/nonexistent/relay.yaml", "--check-config"])
        #expect(missing.stderr.contains("cannot read the settings file"), "\(missing.stderr)")
        cli.environment["CONFIDANT_PORT"] = "eighty"
        let variable = try await cli.run(["serve", "--check-config"])
        #expect(variable.status != 0 && variable.stderr.contains("is set at CONFIDANT_PORT"), "\(variable.stderr)")
    }

    @Test("a relay runs on its settings file, and admin commands find its data through the same file")
    func servesFromFile() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let dataDirectory = cli.directory.appendingPathComponent("relay")
        let file = cli.directory.appendingPathComponent("relay.yaml")
        try "registration: invite\ndata-dir: \(dataDirectory.path)\n".write(to: file, atomically: true, encoding: .utf8)
        let serve = try ServeProcess(
            dataDirectory: dataDirectory, confidantServe: true, extra: ["--config", file.path])
        defer { serve.kill(SIGTERM) }
        let server = try await serve.relay().baseURL.absoluteString
        let refused = try await AdminCommandTests.refusedSignUp(cli, server: server, name: "nocode", extra: [])
        #expect(refused.status != 0 && refused.stderr.contains("invite only"), "\(refused.stderr)")
        let created = try await cli.run(["admin", "invite", "create", "--config", file.path])
        #expect(created.status == 0 && created.text.contains("invite code: "), "\(created.stderr)")
        let listed = try await cli.run(["admin", "invite", "list", "--data-dir", dataDirectory.path])
        #expect(listed.text.contains("active"), "the file's data-dir is the relay's: \(listed.text)")
    }

    /// The long option names in `--experimental-dump-help` output.
    static func longOptions(_ json: Data) throws -> Set<String> {
        let root = try JSONSerialization.jsonObject(with: json) as? [String: Any]
        let arguments = (root?["command"] as? [String: Any])?["arguments"] as? [[String: Any]] ?? []
        return Set(
            arguments.flatMap { argument in
                (argument["names"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "long" }
                    .compactMap { $0["name"] as? String }
            })
    }
}
