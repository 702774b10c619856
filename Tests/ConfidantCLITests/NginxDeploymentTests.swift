import ConfidantTestSupport
import Foundation
import Testing

/// docs/deploy/: the nginx site and the systemd unit operators are told to use, run as written
/// but for addresses, ports and files. nginx (Debian's package, which Tests/setup.sh installs)
/// terminates TLS in front of `confidant serve`; the CLI signs up, chats over the stream and
/// sends an attachment through it, and the relay records the client's address, not nginx's.
@Suite("Deployment behind nginx")
struct NginxDeploymentTests {
    /// nginx connects to the relay from this address, so that it differs from the client's 127.0.0.1.
    static let proxyAddress = "127.0.0.2"

    /// nginx in the foreground with the documented site and a main configuration of the test's own.
    struct Nginx {
        let process = Process()
        let port: Int

        init(site: URL, directory: URL, relayPort: Int, certificate: URL, key: URL) async throws {
            let binary = "/usr/sbin/nginx"
            guard FileManager.default.isExecutableFile(atPath: binary) else {
                try Prerequisite.missing("nginx (apt-get install nginx; Tests/setup.sh installs it)")
            }
            port = try LoopbackPort.free()
            var text = try String(contentsOf: site, encoding: .utf8)
            for (documented, tested) in [
                ("listen 443 ssl;", "listen 127.0.0.1:\(port) ssl;"), ("listen [::]:443 ssl;", ""),
                ("server 127.0.0.1:8080;", "server 127.0.0.1:\(relayPort);"),
                ("/etc/letsencrypt/live/relay.example.com/fullchain.pem", certificate.path),
                ("/etc/letsencrypt/live/relay.example.com/privkey.pem", key.path),
                ("proxy_pass http://confidant;", "proxy_pass http://confidant;\n        proxy_bind \(proxyAddress);"),
            ] {
                guard text.contains(documented) else { throw CLIFailure("the nginx site lost `\(documented)`") }
                text = text.replacingOccurrences(of: documented, with: tested)
            }
            let siteCopy = directory.appendingPathComponent("site.conf")
            try text.write(to: siteCopy, atomically: true, encoding: .utf8)
            let temporary = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map {
                "\($0)_temp_path \(directory.appendingPathComponent($0).path);"
            }
            let main = """
                daemon off;
                master_process off;
                pid \(directory.appendingPathComponent("nginx.pid").path);
                error_log \(directory.appendingPathComponent("error.log").path) warn;
                events { worker_connections 256; }
                http {
                    access_log off;
                    \(temporary.joined(separator: "\n    "))
                    include \(siteCopy.path);
                }
                """
            let configuration = directory.appendingPathComponent("nginx.conf")
            try main.write(to: configuration, atomically: true, encoding: .utf8)
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = [
                "-c", configuration.path, "-p", directory.path, "-e",
                directory.appendingPathComponent("error.log").path,
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            guard try await LoopbackPort.waitUntilAccepting(port, while: { process.isRunning }) else {
                let log =
                    (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
                throw CLIFailure("nginx did not start: \(log)")
            }
        }

        /// SIGKILL: nginx without its master process blocks the signals that would stop it, and
        /// it has no children to leave behind.
        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    @Test("sign-up, a live chat and an attachment through nginx with TLS; the relay sees the client's address")
    func throughNginx() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let certificates = try await TLSTests.Certificates(in: cli.directory.appendingPathComponent("tls"))
        let (certificate, key) = try await certificates.server("relay")
        let dataDirectory = cli.directory.appendingPathComponent("server")
        let serve = try ServeProcess(
            dataDirectory: dataDirectory, extra: ["--trusted-proxy", "\(Self.proxyAddress)/32"])
        defer {
            serve.kill(SIGTERM)
            _ = serve.waitForExit()
        }
        let relay = try await serve.relay()
        let nginxDirectory = cli.directory.appendingPathComponent("nginx")
        try FileManager.default.createDirectory(at: nginxDirectory, withIntermediateDirectories: true)
        let nginx = try await Nginx(
            site: Self.deployFile("nginx-confidant.conf"), directory: nginxDirectory, relayPort: relay.port,
            certificate: certificate, key: key)
        defer { nginx.stop() }

        var trusting = cli
        trusting.environment["CONFIDANT_CA_FILE"] = certificates.ca.path
        let url = "https://127.0.0.1:\(nginx.port)"
        let (alice, bob) = try await ChatCommandTests.register(trusting, server: url, dataDirectory: dataDirectory)

        // The stream through nginx's WebSocket upgrade: Bob's chat shows Alice's message live.
        let terminal = try PseudoTerminal(
            executable: CLIExecutable.url, arguments: ["chat", "--profile", "bob", alice],
            environment: trusting.environment, directory: trusting.directory)
        defer { terminal.terminate() }
        #expect(try await terminal.waitFor("you> ", seconds: 60))
        let before = terminal.output.count
        #expect(try await trusting.run(["send", "--profile", "alice", bob, "live through nginx"]).status == 0)
        #expect(try await terminal.waitFor("Alice: live through nginx", after: before, seconds: 60))
        // nginx reaches the relay from the proxy's address (so the check of the client's address
        // below is not passed by a direct connection).
        #expect(try Self.connections(toPort: relay.port, from: Self.proxyAddress) > 0)
        terminal.type("/quit\r")
        #expect(await terminal.waitForExit(seconds: 30) == 0)

        // An attachment larger than nginx's default 1 MiB body limit, both ways.
        let bytes = AttachmentCommandTests.pattern(3 << 20, seed: 5)
        try bytes.write(to: cli.directory.appendingPathComponent("report.bin"))
        let sent = try await trusting.run(["send", "--profile", "alice", bob, "the report", "--attach", "report.bin"])
        #expect(sent.status == 0, "\(sent.stderr)")
        let history = try await trusting.run(["chat", "history", "--profile", "bob", alice, "--json"])
        let lines = try JSONDecoder().decode([AttachmentCommandTests.Line].self, from: history.stdout)
        let message = try #require(lines.first { $0.text == "the report" }, "\(history.stderr)")
        let out = cli.directory.appendingPathComponent("saved")
        let saved = try await trusting.run(["attachment", "save", "--profile", "bob", message.id, "--out", out.path])
        #expect(saved.status == 0, "\(saved.stderr)")
        #expect(try Data(contentsOf: out.appendingPathComponent("report.bin")) == bytes)

        // The relay counted the client, not the proxy it trusts.
        let shown = try await cli.run(["admin", "account", "show", alice, "--data-dir", dataDirectory.path])
        let from = shown.text.split(separator: "\n").first { $0.contains("signed in from") } ?? ""
        #expect(from.contains("127.0.0.1") && !from.contains(Self.proxyAddress), "\(shown.text) \(shown.stderr)")
    }

    @Test("the documented systemd unit passes systemd-analyze verify")
    func systemdUnit() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            try Prerequisite.missing("systemd-analyze (apt-get install systemd; Tests/setup.sh installs it)")
        }
        let cli = try CLIProcess()
        defer { cli.remove() }
        // As installed, but with this build's binary where the unit expects /usr/local/bin/confidant.
        let unit = try String(contentsOf: Self.deployFile("confidant.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/confidant serve"))
        for setting in ["NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/confidant"] {
            #expect(unit.contains(setting), "\(setting)")
        }
        let copy = cli.directory.appendingPathComponent("confidant.service")
        try unit.replacingOccurrences(of: "/usr/local/bin/confidant", with: try CLIExecutable.url.path)
            .write(to: copy, atomically: true, encoding: .utf8)
        let verified = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/systemd-analyze"), ["verify", copy.path], mergingStandardError: true)
        // Only the missing `confidant` user may be reported on a machine that has none.
        let complaints = verified.text.split(separator: "\n").filter {
            !$0.contains("confidant") || !$0.contains("user")
        }
        #expect(verified.status == 0 && complaints.isEmpty, "\(verified.text)")
    }

    /// Established TCP connections from `address` to local `port`, as /proc/net/tcp lists them
    /// (addresses in hex, the IPv4 bytes reversed).
    static func connections(toPort port: Int, from address: String) throws -> Int {
        let bytes = address.split(separator: ".").compactMap { UInt8($0) }.reversed()
        let remote = bytes.map { String(format: "%02X", $0) }.joined() + ":"
        let local = String(format: ":%04X", port)
        // Read to the end: /proc files report size 0, and a busy machine lists many sockets.
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/net/tcp"))
        defer { try? handle.close() }
        let table = try handle.readToEnd() ?? Data()
        return String(decoding: table, as: UTF8.self).split(separator: "\n").filter {
            let fields = $0.split(separator: " ")
            return fields.count > 3 && fields[1].hasSuffix(local) && fields[2].hasPrefix(remote) && fields[3] == "01"
        }.count
    }

    /// A file of docs/deploy/ in this checkout.
    static func deployFile(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/deploy/\(name)")
    }
}
