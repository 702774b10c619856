import Foundation

/// The relay as a child process: `confidant-test-relay` (the same server as `confidant serve`,
/// with cheap password hashing), or the production `confidant serve` when asked.
package struct ServeProcess {
    package let process = Process()
    let output = Pipe()
    package let dataDirectory: URL

    /// - Parameters:
    ///   - port: 0 for a free port; a fixed one to restart a relay where its clients expect it.
    ///   - confidantServe: run the production `confidant serve` (bcrypt cost 12: slow to sign up in).
    ///   - extra: more options (`--tls-cert …`).
    ///   - environment: variables to add to the test process's own for the relay (never set in
    ///     this process: `setenv` races every other test's process launch, which reads `environ`).
    package init(
        dataDirectory: URL, database: String? = nil, port: Int = 0, confidantServe: Bool = false,
        extra: [String] = [], environment: [String: String] = [:]
    ) throws {
        self.dataDirectory = dataDirectory
        let options =
            ["--port", String(port), "--data-dir", dataDirectory.path, "--log-level", "error"]
            + (database.map { ["--database", $0] } ?? []) + extra
        if confidantServe {
            process.executableURL = try CLIExecutable.url
            process.arguments = ["serve"] + options
        } else {
            process.executableURL = try CLIExecutable.url(named: "confidant-test-relay")
            process.arguments = options
        }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
        }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Waits for the "listening on" line and returns a handle on the served relay.
    package func relay() async throws -> ServedRelay {
        // The relay may take a while to start on a busy machine.
        let text = await ChildProcess.firstLine(of: output.fileHandleForReading)
        guard let range = text.range(of: "127.0.0.1:"),
            let port = Int(text[range.upperBound...].prefix(while: \.isNumber))
        else {
            throw CocoaError(.fileReadCorruptFile)
        }
        return ServedRelay(port: port, dataDirectory: dataDirectory, processID: process.processIdentifier)
    }

    package func kill(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

    package func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// The parts of `TestRelay` that `TestUser` needs, for a relay in another process.
package struct ServedRelay: RelayEndpoint {
    package let port: Int
    package let dataDirectory: URL
    package let processID: Int32
}

/// The built `confidant` executable, which sits beside the test bundle in the build directory.
package enum CLIExecutable {
    /// The `confidant` binary of this build.
    package static var url: URL {
        get throws { try url(named: "confidant") }
    }

    /// A binary of this build, by product name.
    package static func url(named name: String) throws -> URL {
        let candidates =
            [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
            + Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        for directory in candidates {
            let url = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw CocoaError(.fileNoSuchFile)
    }
}
