import ConfidantTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `confidant serve --tls-cert --tls-key` and the client against it, with certificates made by
/// openssl for the test: a private CA, trusted through `CONFIDANT_CA_FILE`.
@Suite("TLS")
struct TLSTests {
    /// A CA and server certificates for 127.0.0.1 signed by it, in `directory`.
    struct Certificates {
        let directory: URL
        var ca: URL { directory.appendingPathComponent("ca.pem") }

        init(in directory: URL) async throws {
            self.directory = directory
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try await openssl([
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                "-subj", "/CN=Confidant test CA", "-keyout", path("ca.key"), "-out", path("ca.pem"),
            ])
        }

        private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        private func openssl(_ arguments: [String]) async throws {
            let result = try await ChildProcess.run(command: "openssl", arguments, directory: directory)
            guard result.status == 0 else { throw CLIFailure("openssl \(arguments[0]): \(result.errorText)") }
        }

        /// A key and a certificate for 127.0.0.1 signed by the CA; returns (certificate, key).
        func server(_ name: String) async throws -> (certificate: URL, key: URL) {
            try "subjectAltName=IP:127.0.0.1".write(
                to: directory.appendingPathComponent("san.ext"), atomically: true, encoding: .utf8)
            try await openssl([
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(name)",
                "-keyout", path("\(name).key"), "-out", path("\(name).csr"),
            ])
            try await openssl([
                "x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-days", "1", "-extfile", path("san.ext"), "-out", path("\(name).pem"),
            ])
            return (directory.appendingPathComponent("\(name).pem"), directory.appendingPathComponent("\(name).key"))
        }

        /// The subject common name of the certificate the server on `port` presents.
        func presented(port: Int) async throws -> String {
            let connection = try await ChildProcess.run(
                command: "openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", ca.path],
                stdin: Data(), mergingStandardError: true)
            let text = connection.text
            guard let range = text.range(of: "subject=") else { throw CLIFailure("no certificate: \(text)") }
            return String(text[range.upperBound...].prefix { $0 != "\n" }).replacingOccurrences(of: " ", with: "")
        }
    }

    @Test(
        "HTTPS with a private CA: the client trusts it only when told; plain HTTP elsewhere is refused; SIGHUP renews")
    func https() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let certificates = try await Certificates(in: cli.directory.appendingPathComponent("tls"))
        let first = try await certificates.server("first")
        let dataDirectory = cli.directory.appendingPathComponent("server")
        let live = cli.directory.appendingPathComponent("live.pem")
        let liveKey = cli.directory.appendingPathComponent("live.key")
        try FileManager.default.copyItem(at: first.certificate, to: live)
        try FileManager.default.copyItem(at: first.key, to: liveKey)
        let server = try ServeProcess(
            dataDirectory: dataDirectory, confidantServe: true,
            extra: ["--tls-cert", live.path, "--tls-key", liveKey.path])
        defer {
            server.kill(SIGTERM)
            _ = server.waitForExit()
        }
        let port = try await server.relay().port
        let url = "https://127.0.0.1:\(port)"

        // Without the CA the certificate is not trusted: nothing is sent.
        let untrusted = try await cli.run(
            [
                "account", "register", "--profile", "eve", "--server", url, "--email", "eve@example.com", "--name",
                "Eve", "--password-stdin", "--scrypt-log2n", "10",
            ], stdin: Data("password of Eve\n".utf8))
        #expect(untrusted.status != 0)
        #expect(
            untrusted.stderr.contains("unreachable") || untrusted.stderr.lowercased().contains("certificate"),
            "\(untrusted.stderr)")

        // With it: an account, a message, over HTTPS.
        var trusting = cli
        trusting.environment["CONFIDANT_CA_FILE"] = certificates.ca.path
        let (alice, bob) = try await ChatCommandTests.register(trusting, server: url, dataDirectory: dataDirectory)
        #expect(try await trusting.run(["send", "--profile", "alice", bob, "over TLS"]).status == 0)
        #expect(try await ChatCommandTests.history(trusting, profile: "bob", with: alice).map(\.text) == ["over TLS"])

        // The stream over WSS: Bob's chat shows a message as it arrives.
        let terminal = try PseudoTerminal(
            executable: CLIExecutable.url, arguments: ["chat", "--profile", "bob", alice],
            environment: trusting.environment, directory: trusting.directory)
        defer { terminal.terminate() }
        #expect(try await terminal.waitFor("over TLS", seconds: 60))
        let before = terminal.output.count
        #expect(try await trusting.run(["send", "--profile", "alice", bob, "live over WSS"]).status == 0)
        #expect(try await terminal.waitFor("live over WSS", after: before, seconds: 60))
        #expect(!String(decoding: terminal.output, as: UTF8.self).contains("disconnected"))
        terminal.type("/quit\r")

        // Plain HTTP to another machine is refused before anything is sent; loopback is fine.
        let insecure = try await cli.run(
            [
                "account", "register", "--profile", "mallory", "--server", "http://relay.example:8080", "--email",
                "m@example.com", "--name", "M", "--password-stdin",
            ], stdin: Data("a long password\n".utf8))
        #expect(insecure.status != 0)
        #expect(insecure.stderr.contains("plain HTTP to another machine"), "\(insecure.stderr)")

        // A renewed certificate: copied over the files, SIGHUP, and new connections present it.
        #expect(try await certificates.presented(port: port).contains("CN=first") == true)
        let second = try await certificates.server("second")
        try FileManager.default.removeItem(at: live)
        try FileManager.default.removeItem(at: liveKey)
        try FileManager.default.copyItem(at: second.certificate, to: live)
        try FileManager.default.copyItem(at: second.key, to: liveKey)
        server.kill(SIGHUP)
        var presented = ""
        for _ in 0..<200 {
            presented = try await certificates.presented(port: port)
            if presented.contains("CN=second") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(presented.contains("CN=second"), "\(presented)")
        #expect(try await trusting.run(["send", "--profile", "alice", bob, "after the renewal"]).status == 0)
    }
}
