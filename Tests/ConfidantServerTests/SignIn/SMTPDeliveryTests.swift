import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real SMTP server for the test: aiosmtpd (PyPI) storing what it receives in a maildir,
/// optionally with STARTTLS under a throw-away self-signed certificate.
final class SMTPSink: @unchecked Sendable {
    let port: Int
    let directory: URL
    let certificate: URL?
    private let process = Process()

    init(tls: Bool) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-smtp-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try LoopbackPort.free()
        var arguments = ["-m", "aiosmtpd", "-n", "-l", "127.0.0.1:\(port)", "-c", "aiosmtpd.handlers.Mailbox"]
        if tls {
            let cert = directory.appendingPathComponent("cert.pem")
            let key = directory.appendingPathComponent("key.pem")
            let made = try await ChildProcess.run(
                command: "openssl",
                [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key.path, "-out", cert.path,
                ])
            guard made.status == 0 else { throw CLIFailure("openssl could not make a certificate: \(made.errorText)") }
            arguments += ["--tlscert", cert.path, "--tlskey", key.path]
            certificate = cert
        } else {
            certificate = nil
        }
        arguments.append(directory.appendingPathComponent("maildir").path)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard try await LoopbackPort.waitUntilAccepting(port, while: { process.isRunning }) else {
            stop()
            throw CLIFailure("aiosmtpd did not start (python3 -m pip install aiosmtpd)")
        }
    }

    func stop() {
        // SIGKILL: a child started by the test runner may inherit a signal mask that blocks SIGTERM.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The code in the newest message to `email`.
    @Sendable func code(for email: String) throws -> String {
        guard let mail = try messages().last(where: { $0.contains("To: <\(email.lowercased())>") }),
            let range = mail.range(of: "sign-in code is ")
        else { throw CLIFailure("no sign-in code for \(email) reached the SMTP sink") }
        return String(mail[range.upperBound...].prefix { $0 != "." })
    }

    /// The messages received so far, oldest first.
    func messages() throws -> [String] {
        let new = directory.appendingPathComponent("maildir/new")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: new.path)) ?? []
        return try names.sorted().map { try String(contentsOf: new.appendingPathComponent($0), encoding: .utf8) }
    }
}

struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

@Suite("E-mail codes through a real SMTP server")
struct SMTPDeliveryTests {
    /// Signs in from a new device: password, then the code that arrives by mail.
    static func signInWithMailedCode(_ relay: TestRelay, sink: SMTPSink) async throws -> Components.Schemas.Session? {
        let frank = try await TestUser.make(relay, name: "frank", codes: sink.code(for:))
        let tablet = try PrivateIdentity.generate()
        let client = relay.client()
        let start = try await client.startSignIn(
            body: .json(try await .proving(email: frank.email, identity: tablet, on: relay.client())))
        // A default account (password only) from a new device gets the e-mail step too.
        let id = try #require(try start.created.body.json.transactionId)
        let afterPassword = try await client.answerSignInStep(
            path: .init(transactionId: id), body: .json(.init(method: .password, answer: frank.password)))
        guard case .ok(let ok) = afterPassword else { return nil }
        #expect(try ok.body.json.step?.method == .emailCode)
        let mail = try #require(try sink.messages().last)
        #expect(mail.contains("To: <\(frank.email.lowercased())>"))
        #expect(mail.contains("Subject: Your Confidant sign-in code"))
        let range = try #require(mail.range(of: "sign-in code is "))
        let code = String(mail[range.upperBound...].prefix { $0 != "." })
        let done = try await client.answerSignInStep(
            path: .init(transactionId: id), body: .json(.init(method: .emailCode, answer: code)))
        return try done.ok.body.json.session
    }

    @Test("STARTTLS is required by default for any SMTP host but loopback; a plain one then gets nothing")
    func tlsRequiredOffLoopback() async throws {
        #expect(SMTPConfiguration(host: "mail.example.com", sender: "a@example.com").requireTLS)
        #expect(SMTPConfiguration(host: "10.0.0.25", sender: "a@example.com").requireTLS)
        #expect(!SMTPConfiguration(host: "127.0.0.1", sender: "a@example.com").requireTLS)
        #expect(!SMTPConfiguration(host: "localhost", sender: "a@example.com").requireTLS)
        // Required, against a server that offers no STARTTLS: the code is not sent in the clear.
        let sink = try await SMTPSink(tls: false)
        defer { sink.stop() }
        var smtp = SMTPConfiguration(host: "127.0.0.1", port: sink.port, sender: "no-reply@confidant.test")
        smtp.requireTLS = true
        try await TestRelay.run(adjust: { [smtp] in $0.smtp = smtp }) { relay in
            let email = "plain-\(UUID().uuidString.prefix(6).lowercased())@example.com"
            let client = relay.client()
            _ = try await client.signUp(
                body: .json(.init(email: email, password: "a long password here", displayName: "P"))
            ).created
            let start = try await client.startSignIn(
                body: .json(try await .proving(email: email, identity: try PrivateIdentity.generate(), on: client)))
            let id = try #require(try start.created.body.json.transactionId)
            let answer = try await client.answerSignInStep(
                path: .init(transactionId: id), body: .json(.init(method: .password, answer: "a long password here")))
            #expect(try answer.problem == "mail_unavailable 503")
            #expect(try sink.messages().isEmpty)
        }
    }

    @Test("the code goes through plain SMTP and signs the new device in")
    func plain() async throws {
        let sink = try await SMTPSink(tls: false)
        defer { sink.stop() }
        try await TestRelay.run(adjust: {
            $0.smtp = SMTPConfiguration(host: "127.0.0.1", port: sink.port, sender: "no-reply@confidant.test")
        }) { relay in
            let session = try await Self.signInWithMailedCode(relay, sink: sink)
            #expect(session != nil)
            #expect(!FileManager.default.fileExists(atPath: relay.directory.appendingPathComponent("outbox").path))
        }
    }

    @Test("STARTTLS when offered, verified against the configured certificate; an untrusted certificate sends nothing")
    func startTLS() async throws {
        let sink = try await SMTPSink(tls: true)
        defer { sink.stop() }
        var smtp = SMTPConfiguration(host: "127.0.0.1", port: sink.port, sender: "no-reply@confidant.test")
        smtp.requireTLS = true
        smtp.trustRootsFile = sink.certificate?.path
        try await TestRelay.run(adjust: { [smtp] in $0.smtp = smtp }) { relay in
            let session = try await Self.signInWithMailedCode(relay, sink: sink)
            #expect(session != nil)
        }
        smtp.trustRootsFile = nil
        try await TestRelay.run(adjust: { [smtp] in $0.smtp = smtp }) { relay in
            let before = try sink.messages().count
            // A new account: its first sign-in asks for the code that cannot be sent.
            let george = "george-\(UUID().uuidString.prefix(6).lowercased())@example.com"
            let client = relay.client()
            _ = try await client.signUp(
                body: .json(.init(email: george, password: "george's long password", displayName: "George"))
            ).created
            let start = try await client.startSignIn(
                body: .json(try await .proving(email: george, identity: try PrivateIdentity.generate(), on: client))
            )
            let id = try #require(try start.created.body.json.transactionId)
            let answer = try await client.answerSignInStep(
                path: .init(transactionId: id),
                body: .json(.init(method: .password, answer: "george's long password")))
            #expect(try answer.problem == "mail_unavailable 503")
            #expect(try sink.messages().count == before)
        }
    }
}
