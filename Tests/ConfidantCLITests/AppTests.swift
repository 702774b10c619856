import ConfidantTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `confidant app` as a user meets it: real relays, real app processes, and — for the pages —
/// two headless Chromium browsers driven by Selenium (Tests/Interop/app_browser.py); the local
/// access rules probed with raw HTTP (Tests/Interop/app_access.py).
@Suite("App")
struct AppTests {
    /// A relay and a `CONFIDANT_HOME` of the test's own, removed afterwards.
    struct Setting {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-app-\(UUID())")
        let server: ServeProcess
        let relay: ServedRelay

        /// The relay's e-mail code cool-down, short so that the browser test can ask for a new code.
        static let resendSeconds = "4"

        init() async throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            server = try ServeProcess(
                dataDirectory: directory.appendingPathComponent("relay"),
                extra: ["--email-code-resend-seconds", Self.resendSeconds])
            do {
                relay = try await server.relay()
            } catch {
                server.kill(SIGTERM)
                throw error
            }
        }

        var relayURL: String { "http://127.0.0.1:\(relay.port)" }
        var home: URL { directory.appendingPathComponent("home") }

        func tearDown() {
            server.kill(SIGTERM)
            _ = server.waitForExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test(
        "only the browser with the launch cookie, on this listener's Host and Origin, with the form token, gets in; every answer carries the CSP"
    )
    func localAccess() async throws {
        let setting = try await Setting()
        defer { setting.tearDown() }
        // What an upload interrupted by a crash left: plaintext, removed when the app starts.
        let stale = setting.home.appendingPathComponent("probe/uploads-\(UUID())")
        try FileManager.default.createDirectory(at: stale, withIntermediateDirectories: true)
        try Data("a photo's bytes".utf8).write(to: stale.appendingPathComponent("photo.jpg"))
        let app = try await AppProcess(home: setting.home, profile: "probe", server: setting.relayURL)
        defer { app.stop() }
        #expect(!FileManager.default.fileExists(atPath: stale.path), "an interrupted upload's files are removed")
        let output = try await PythonScript.run("app_access.py", [app.launchURL.absoluteString])
        #expect(output.hasSuffix("checks passed"), "\(output)")
    }

    @Test(
        "two users sign up, chat live without reloading and through a relay outage, a hostile message stays text, verify with QR codes, the vault with its photo viewer, edits and a backup restored on the other profile (Chromium)"
    )
    func twoUsersInBrowsers() async throws {
        let setting = try await Setting()
        defer { setting.tearDown() }
        let alice = try await AppProcess(home: setting.home, profile: "alice", server: setting.relayURL)
        defer { alice.stop() }
        let bob = try await AppProcess(
            home: setting.home, profile: "bob", passphrase: "bob's passphrase", server: setting.relayURL)
        defer { bob.stop() }
        var arguments = [
            "--alice", alice.launchURL.absoluteString, "--bob", bob.launchURL.absoluteString, "--relay",
            setting.relayURL, "--outbox", setting.relay.dataDirectory.appendingPathComponent("outbox").path,
            "--cli", try CLIExecutable.url.path, "--home", setting.home.path,
            // The script stops the relay mid-chat and starts it again on the same port and data.
            "--relay-pid", String(setting.server.process.processIdentifier),
            "--relay-exe", try CLIExecutable.url(named: "confidant-test-relay").path,
            "--relay-data", setting.relay.dataDirectory.path, "--resend-seconds", Setting.resendSeconds,
            "--work", setting.directory.path,
        ]
        // CONFIDANT_SCREENSHOTS=docs/screenshots refreshes the README's pictures.
        if let screenshots = ProcessInfo.processInfo.environment["CONFIDANT_SCREENSHOTS"] {
            arguments += ["--screenshots", screenshots]
        }
        let output = try await PythonScript.run("app_browser.py", arguments)
        #expect(output.hasSuffix("checks passed"), "\(output)")
    }
}
