import Foundation

/// `confidant app` as a child process, on a free port of 127.0.0.1, for one profile in a
/// `CONFIDANT_HOME` of the test's own.
package final class AppProcess: Sendable {
    private let process: Process
    /// The one-time link the app printed (`http://127.0.0.1:PORT/?token=…`).
    package let launchURL: URL

    /// Starts the app and waits for its link.
    /// - Parameters:
    ///   - home: the `CONFIDANT_HOME` (profiles are directories in it).
    ///   - profile: the profile name.
    ///   - passphrase: given through `CONFIDANT_PASSPHRASE`; nil lets the page ask.
    ///   - server: what the sign-in form proposes.
    package init(home: URL, profile: String, passphrase: String? = nil, server: String) async throws {
        let process = Process()
        process.executableURL = try CLIExecutable.url
        process.arguments = ["app", "--profile", profile, "--port", "0", "--no-open", "--server", server]
        var environment = ProcessInfo.processInfo.environment
        environment["CONFIDANT_HOME"] = home.path
        environment["CONFIDANT_PASSPHRASE"] = passphrase
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let line = await ChildProcess.firstLine(of: output.fileHandleForReading)
        guard line.hasPrefix("open "),
            let url = URL(string: line.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            throw CocoaError(
                .fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "confidant app printed \(line)"])
        }
        launchURL = url
    }

    /// The app's origin, `http://127.0.0.1:PORT`.
    package var origin: String { "http://127.0.0.1:\(launchURL.port ?? 0)" }

    /// Stops the app (SIGTERM, as a user's Ctrl-C) and waits for it.
    package func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
