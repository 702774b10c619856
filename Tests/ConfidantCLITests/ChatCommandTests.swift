import ConfidantAuth
import ConfidantTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The account and chat commands as a user runs them: real `confidant serve` and client processes.
@Suite("Chat commands end to end")
struct ChatCommandTests {
    struct Line: Decodable {
        let direction: String
        let text: String?
        let unreadableReason: String?
        let status: String
        /// 2 for a session message, 1 for a v1 envelope; nil for notices and own sends.
        let envelope: Int?
    }

    struct InboxRow: Decodable {
        let email: String
        let unread: Int
        let keyChangeWarning: String?
    }

    /// Registers alice and bob in two profiles of one CONFIDANT_HOME, answering the codes the
    /// relay (its data in `dataDirectory`) mails them.
    static func register(_ cli: CLIProcess, server: String, dataDirectory: URL) async throws -> (
        alice: String, bob: String
    ) {
        let suffix = UUID().uuidString.prefix(6).lowercased()
        let alice = "alice-\(suffix)@example.com"
        let bob = "bob-\(suffix)@example.com"
        for (profile, email, name) in [("alice", alice, "Alice"), ("bob", bob, "Bob")] {
            let result = try await cli.register(
                profile: profile, server: server, email: email, name: name, password: "password of \(name)",
                dataDirectory: dataDirectory)
            guard result.status == 0 else { throw CLIFailure(result.stderr) }
            // Right after sign-up the command says how to choose the sign-in protection.
            #expect(result.text.contains("next, choose how you sign in: `confidant auth setup --profile \(profile)`"))
        }
        return (alice, bob)
    }

    /// `confidant login` on a terminal: the password, then the e-mail code the relay wrote to its outbox.
    static func loginOnTerminal(_ cli: CLIProcess, _ arguments: [String], password: String, dataDirectory: URL)
        async throws
    {
        let terminal = try PseudoTerminal(
            executable: CLIExecutable.url, arguments: arguments, environment: cli.environment, directory: cli.directory)
        defer { terminal.terminate() }
        terminal.type(password + "\r")
        #expect(try await terminal.waitFor("The code we sent to", seconds: 60))
        terminal.type(try SignInOutbox.latestCode(dataDirectory: dataDirectory) + "\r")
        #expect(try await terminal.waitFor("signed in as", seconds: 60))
        #expect(await terminal.waitForExit(seconds: 30) == 0)
    }

    /// `confidant serve` on a free port, its data in `cli`'s directory, with alice and bob registered.
    struct ServedChat {
        let server: ServeProcess
        let dataDirectory: URL
        let port: Int
        let alice: String, bob: String

        init(_ cli: CLIProcess, extra: [String] = []) async throws {
            dataDirectory = cli.directory.appendingPathComponent("server")
            let server = try ServeProcess(dataDirectory: dataDirectory, extra: extra)
            do {
                port = try await server.relay().port
                (alice, bob) = try await ChatCommandTests.register(
                    cli, server: "http://127.0.0.1:\(port)", dataDirectory: dataDirectory)
            } catch {
                server.kill(SIGTERM)
                _ = server.waitForExit()
                throw error
            }
            self.server = server
        }

        func stop() {
            server.kill(SIGTERM)
            _ = server.waitForExit()
        }
    }

    static func history(_ cli: CLIProcess, profile: String, with email: String) async throws -> [Line] {
        let result = try await cli.run(["chat", "history", "--profile", profile, email, "--limit", "1000", "--json"])
        guard result.status == 0 else { throw CLIFailure(result.stderr) }
        return try JSONDecoder().decode([Line].self, from: result.stdout)
    }

    @Test(
        "100 messages in order, a new device key with its warning and unreadable placeholders, no plaintext on the server"
    )
    func endToEnd() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ServedChat(cli)
        defer { served.stop() }
        let (alice, bob, dataDirectory) = (served.alice, served.bob, served.dataDirectory)

        let large = String(repeating: "0123456789abcdef", count: 60 * 1024 / 16)
        let texts = (0..<100).map { index -> String in
            switch index {
            case 1: return "x"
            case 50: return large
            default: return "№\(index) Привет 👋 你好 secret-marker-\(index)"
            }
        }
        for text in texts {
            let arguments = ["send", "--profile", "alice", bob] + (text == large ? ["-"] : [text])
            let result = try await cli.run(arguments, stdin: text == large ? Data(text.utf8) : Data())
            #expect(result.status == 0, "\(result.stderr)")
        }
        let inbox = try await cli.run(["inbox", "--profile", "bob", "--json"])
        let rows = try JSONDecoder().decode([InboxRow].self, from: inbox.stdout)
        #expect(rows.map(\.email) == [alice])
        #expect(rows.first?.unread == 100)
        let received = try await Self.history(cli, profile: "bob", with: alice)
        #expect(received.map(\.text) == texts)
        #expect(received.allSatisfy { $0.direction == "incoming" })

        // Bob reinstalls (a new key for his device) while a message to the old key waits.
        #expect(try await cli.run(["send", "--profile", "alice", bob, "sealed for the old key"]).status == 0)
        // A new key adds the e-mail code to the sign-in; Bob reads it from the relay's outbox.
        try await Self.loginOnTerminal(
            cli, ["account", "login", "--profile", "bob", "--email", bob, "--password-stdin", "--new-device-key"],
            password: "password of Bob", dataDirectory: dataDirectory)
        let afterReinstall = try await Self.history(cli, profile: "bob", with: alice)
        #expect(afterReinstall.last?.text == nil)
        #expect(afterReinstall.last?.unreadableReason?.contains("sealed for a key this device no longer has") == true)
        #expect(Array(afterReinstall.prefix(100).map(\.text)) == texts, "history kept on the device stays readable")

        let aliceInbox = try await cli.run(["inbox", "--profile", "alice"])
        #expect(
            aliceInbox.text.contains("Bob's security key changed — messages sent to the old device can't be read there")
        )
        #expect(try await cli.run(["send", "--profile", "alice", bob, "for the new key"]).status == 0)
        #expect(try await Self.history(cli, profile: "bob", with: alice).last?.text == "for the new key")

        // Bob signs in on a second device (a new profile): Alice is warned again, and her next
        // message reaches both of Bob's devices.
        try await Self.loginOnTerminal(
            cli,
            [
                "account", "login", "--profile", "bob-tablet", "--server", "http://127.0.0.1:\(served.port)", "--email",
                bob,
                "--password-stdin", "--scrypt-log2n", "10",
            ],
            password: "password of Bob", dataDirectory: dataDirectory)
        // Bob's first device is told that a device signed in to his account, once.
        let bobsInbox = try await cli.run(["inbox", "--profile", "bob"])
        #expect(bobsInbox.stderr.contains("A new device ("), "\(bobsInbox.stderr)")
        #expect(try await !cli.run(["inbox", "--profile", "bob"]).stderr.contains("A new device"))
        let warned = try await JSONDecoder().decode(
            [InboxRow].self, from: cli.run(["inbox", "--profile", "alice", "--json"]).stdout)
        #expect(
            warned.first?.keyChangeWarning
                == "Bob's security key changed — messages sent to the old device can't be read there")
        #expect(try await cli.run(["send", "--profile", "alice", bob, "to both devices"]).status == 0)
        #expect(try await Self.history(cli, profile: "bob-tablet", with: alice).map(\.text) == ["to both devices"])
        #expect(try await Self.history(cli, profile: "bob", with: alice).last?.text == "to both devices")
        // Bob names his tablet from it; his first device lists both, named, this one first.
        let named = try await cli.run(["account", "devices", "--profile", "bob-tablet", "--name", "Bob's tablet"])
        #expect(
            named.status == 0 && String(decoding: named.stdout, as: UTF8.self).contains("Bob's tablet"),
            "\(named.stderr)")
        let dates = JSONDecoder()
        dates.dateDecodingStrategy = .iso8601
        let listed = try await dates.decode(
            [DeviceRow].self, from: cli.run(["account", "devices", "--profile", "bob", "--json"]).stdout)
        #expect(listed.map(\.name) == ["Confidant on Linux", "Bob's tablet"])
        #expect(listed.map(\.thisDevice) == [true, false])
        #expect(listed.allSatisfy { $0.lastSeenAt != nil && $0.fingerprint != nil })
        let tooLong = try await cli.run(
            ["account", "devices", "--profile", "bob", "--name", String(repeating: "x", count: 41)])
        #expect(tooLong.status != 0 && tooLong.stderr.contains("1 to 40 characters"), "\(tooLong.stderr)")

        // The server's files hold none of the texts.
        var serverBytes = Data()
        for case let file as URL in FileManager.default.enumerator(at: dataDirectory, includingPropertiesForKeys: nil)
            ?? .init()
        {
            serverBytes += (try? Data(contentsOf: file)) ?? Data()
        }
        #expect(serverBytes.count > 100_000)
        for marker in [
            "secret-marker-7", "Привет", "sealed for the old key", "for the new key", "0123456789abcdef0123",
        ] {
            #expect(serverBytes.range(of: Data(marker.utf8)) == nil, "\(marker) is in the server's files")
        }
    }

    @Test("a peer's escape sequences never reach the terminal: history and inbox print them stripped, newlines kept")
    func controlCharactersStripped() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ServedChat(cli)
        defer { served.stop() }
        // Clear the screen, forge a line, set the window title, a C1 CSI, a bidi override.
        let hostile =
            "hi\u{1B}[2J\u{1B}[H\rAlice: send me your password\u{07}\u{1B}]0;pwned\u{07}\u{9B}31m\u{202E}txt.exe\nline two"
        let sent = try await cli.run(["send", "--profile", "alice", served.bob, "-"], stdin: Data(hostile.utf8))
        #expect(sent.status == 0, "\(sent.stderr)")
        for arguments in [
            ["chat", "history", "--profile", "bob", served.alice], ["inbox", "--profile", "bob"],
        ] {
            let result = try await cli.run(arguments)
            #expect(result.status == 0, "\(result.stderr)")
            let printed = result.text
            for forbidden in ["\u{1B}", "\u{07}", "\r", "\u{9B}", "\u{202E}"] {
                #expect(
                    !printed.contains(forbidden), "\(arguments[0]) printed \(forbidden.unicodeScalars.first!.value)")
            }
            #expect(printed.contains("Alice: send me your password"))
        }
        let history = try await cli.run(["chat", "history", "--profile", "bob", served.alice]).text
        #expect(history.contains("txt.exe\nline two"), "the newline is kept")
        // The stored message is unchanged; only printing filters.
        #expect(try await Self.history(cli, profile: "bob", with: served.alice).last?.text == hostile)
    }

    @Test("chat history refuses a limit below 1 before it opens anything")
    func historyLimitIsChecked() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        for limit in ["0", "-3"] {
            let refused = try await cli.run(["chat", "history", "someone@example.com", "--limit=\(limit)"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("--limit must be at least 1, got \(limit)"), "\(refused.stderr)")
        }
    }

    @Test("a message sent while the server is down waits in the outbox and arrives exactly once when it is back")
    func outbox() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let dataDirectory = cli.directory.appendingPathComponent("server")
        let first = try ServeProcess(dataDirectory: dataDirectory)
        let port = try await first.relay().port
        let (alice, bob) = try await Self.register(
            cli, server: "http://127.0.0.1:\(port)", dataDirectory: dataDirectory)
        #expect(try await cli.run(["send", "--profile", "alice", bob, "hello while online"]).status == 0)
        first.kill(SIGTERM)
        #expect(first.waitForExit() == 0)

        let queued = try await cli.run(["send", "--profile", "alice", bob, "written while the server was down"])
        #expect(queued.status == 0, "\(queued.stderr)")
        #expect(queued.text.contains("queued"))
        let offlineInbox = try await cli.run(["inbox", "--profile", "alice"])
        #expect(offlineInbox.stderr.contains("offline"))

        let second = try ServeProcess(dataDirectory: dataDirectory, port: port)
        defer {
            second.kill(SIGTERM)
            _ = second.waitForExit()
        }
        _ = try await second.relay()
        #expect(try await cli.run(["inbox", "--profile", "alice"]).status == 0)
        #expect(try await cli.run(["inbox", "--profile", "alice"]).status == 0)
        let received = try await Self.history(cli, profile: "bob", with: alice)
        #expect(received.map(\.text) == ["hello while online", "written while the server was down"])
        // Bob's history stored them (delivered) and showed them (read): his receipts came back.
        #expect(try await Self.history(cli, profile: "alice", with: bob).map(\.status) == ["read", "read"])
    }

    @Test(
        "chat on a terminal: a message arriving while a line is half typed appears above it, the line survives, and a server restart is survived"
    )
    func interactiveChat() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let server = try ServeProcess(dataDirectory: cli.directory.appendingPathComponent("server"))
        defer {
            if server.process.isRunning {
                server.kill(SIGTERM)
                _ = server.waitForExit()
            }
        }
        let relay = try await server.relay()
        let (alice, bob) = try await Self.register(
            cli, server: "http://127.0.0.1:\(relay.port)", dataDirectory: relay.dataDirectory)
        let earlier = try await cli.run(["send", "--profile", "alice", bob, "earlier message"])
        #expect(earlier.text.contains("sent to Bob"), "\(earlier.text) \(earlier.stderr)")

        let terminal = try PseudoTerminal(
            executable: CLIExecutable.url, arguments: ["chat", "--profile", "bob", alice],
            environment: cli.environment, directory: cli.directory)
        defer { terminal.terminate() }
        // Generous limits: the full test run keeps both cores and the disk busy.
        #expect(try await terminal.waitFor("Alice: earlier message", seconds: 60))
        #expect(try await terminal.waitFor("you> ", seconds: 60))
        terminal.type("half typ")
        #expect(try await terminal.waitFor("you> half typ"))

        let mark = terminal.output.count
        #expect(try await cli.run(["send", "--profile", "alice", bob, "live hello"]).status == 0)
        #expect(try await terminal.waitFor("Alice: live hello", after: mark, seconds: 60))
        let afterMessage = terminal.output
        let messageRange = try #require(
            afterMessage.range(of: Data("Alice: live hello".utf8), in: mark..<afterMessage.count))
        // The message and the redrawn line are two writes; wait for the second rather than race it.
        #expect(
            try await terminal.waitFor("you> half typ", after: messageRange.upperBound),
            "the half-typed line is drawn again below the message")

        terminal.type("ed\r")
        var sent: [Line] = []
        for _ in 0..<100 where sent.last?.text != "half typed" {
            sent = try await Self.history(cli, profile: "alice", with: bob)
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(sent.last?.text == "half typed")
        // The server restarts under the open chat: it reconnects by itself and resumes.
        server.kill(SIGTERM)
        #expect(server.waitForExit() == 0)
        #expect(try await terminal.waitFor("disconnected", seconds: 60))
        let restarted = try ServeProcess(
            dataDirectory: cli.directory.appendingPathComponent("server"), port: relay.port)
        defer {
            restarted.kill(SIGTERM)
            _ = restarted.waitForExit()
        }
        _ = try await restarted.relay()
        let beforeResume = terminal.output.count
        #expect(try await cli.run(["send", "--profile", "alice", bob, "after the restart"]).status == 0)
        #expect(try await terminal.waitFor("Alice: after the restart", after: beforeResume, seconds: 60))
        terminal.type("/quit\r")
        #expect(await terminal.waitForExit(seconds: 10) == 0)
    }
}

/// `confidant auth setup` and `confidant login` through every kind of step, on a terminal.
@Suite("Sign-in commands end to end")
struct SignInCommandTests {
    struct Settings: Decodable {
        let chain: [String]
        let operands: Int
        let arithmeticConfigured: Bool
        let totpEnrolled: Bool
    }

    @Test(
        "auth setup with arithmetic and TOTP, auth show, then login on a new device answering the challenge, the code and the e-mail code"
    )
    func chain() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        let (alice, dataDirectory) = (served.alice, served.dataDirectory)
        let mapping = "+=*,-=/,*=+,/=-"
        let secret = TOTP.generateSecret()
        let totp = TOTP(secret: secret)
        let now = UInt64(Date().timeIntervalSince1970)
        let setup = try await cli.run(
            [
                "auth", "setup", "--profile", "alice", "--methods", "password,arithmetic,totp", "--operands", "3",
                "--map", mapping, "--totp-secret", Base32.encode(secret), "--totp-code", totp.code(at: now),
                "--password-stdin",
            ], stdin: Data("password of Alice\n".utf8))
        #expect(setup.status == 0, "\(setup.stderr)")
        #expect(setup.text.contains("otpauth://totp/"))
        let shown = try await JSONDecoder().decode(
            Settings.self, from: cli.run(["auth", "show", "--profile", "alice", "--json"]).stdout)
        #expect(shown.chain == ["password", "arithmetic", "totp"])
        #expect(shown.operands == 3 && shown.arithmeticConfigured && shown.totpEnrolled)

        // A second device: each step is asked in turn on the terminal.
        let terminal = try PseudoTerminal(
            executable: CLIExecutable.url,
            arguments: [
                "account", "login", "--profile", "alice-laptop", "--server", "http://127.0.0.1:\(served.port)",
                "--email", alice, "--password-stdin", "--scrypt-log2n", "10",
            ],
            environment: cli.environment, directory: cli.directory)
        defer { terminal.terminate() }
        terminal.type("password of Alice\r")
        #expect(try await terminal.waitFor("under your operator mapping", seconds: 60))
        let screen = String(decoding: terminal.output, as: UTF8.self)
        let expression = try #require(
            screen.range(of: "Evaluate ").map { String(screen[$0.upperBound...].prefix { $0 != "u" }) })
        let challenge = try ArithmeticChallenge(parsing: expression.trimmingCharacters(in: .whitespaces))
        terminal.type("\(try #require(challenge.answer(under: ArithmeticMapping(parsing: mapping))))\r")
        #expect(try await terminal.waitFor("authenticator", seconds: 60))
        // A step after the one set-up used (a step is accepted once), read from the clock now:
        // on a busy machine more than the accepted drift may have passed since `now`.
        terminal.type("\(totp.code(at: max(UInt64(Date().timeIntervalSince1970), now + 30)))\r")
        #expect(try await terminal.waitFor("The code we sent to", seconds: 60))
        terminal.type("\(try SignInOutbox.latestCode(dataDirectory: dataDirectory))\r")
        #expect(try await terminal.waitFor("signed in as \(alice)", seconds: 60))
        #expect(await terminal.waitForExit(seconds: 30) == 0)
        #expect(try await cli.run(["account", "whoami", "--profile", "alice-laptop"]).text.contains(alice))
    }
}

struct CLIFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child process on a pseudo-terminal, as a user at a terminal runs it.
final class PseudoTerminal: @unchecked Sendable {
    private let process = Process()
    private let master: Int32
    private let lock = NSLock()
    private var collected = Data()

    init(executable: URL, arguments: [String], environment: [String: String], directory: URL) throws {
        var master: Int32 = 0
        var slave: Int32 = 0
        guard openpty(&master, &slave, nil, nil, nil) == 0 else { throw CLIFailure("openpty failed: \(errno)") }
        self.master = master
        let slaveHandle = FileHandle(fileDescriptor: slave, closeOnDealloc: true)
        process.executableURL = executable
        process.arguments = arguments
        var environment = environment
        environment["TERM"] = "xterm"
        process.environment = environment
        process.currentDirectoryURL = directory
        process.standardInput = slaveHandle
        process.standardOutput = slaveHandle
        process.standardError = slaveHandle
        try process.run()
        let reader = Thread { [self, master] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(master, &buffer, buffer.count)
                if count <= 0 { break }
                lock.withLock { collected.append(contentsOf: buffer[0..<count]) }
            }
        }
        reader.start()
    }

    var output: Data { lock.withLock { collected } }

    func type(_ text: String) {
        _ = text.withCString { write(master, $0, strlen($0)) }
    }

    /// Waits until `text` appears in the output (after byte `after`), for at most `seconds`.
    func waitFor(_ text: String, after: Int = 0, seconds: Double = 15) async throws -> Bool {
        let needle = Data(text.utf8)
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            let output = self.output
            if output.count > after, output.range(of: needle, in: after..<output.count) != nil { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record(
            "'\(text)' did not appear; the terminal shows: \(String(decoding: output, as: UTF8.self).suffix(600))")
        return false
    }

    func waitForExit(seconds: Double) async -> Int32? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        close(master)
    }
}

/// One line of `account devices --json`.
private struct DeviceRow: Decodable {
    let deviceId: String
    let name: String?
    let lastSeenAt: Date?
    let fingerprint: String?
    let thisDevice: Bool
}
