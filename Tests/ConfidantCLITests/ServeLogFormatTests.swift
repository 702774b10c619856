import ConfidantTestSupport
import Foundation
import Testing

/// `confidant serve --log-format`: JSON lines from the real command; anything but text or json
/// is refused before the server starts.
@Suite("serve --log-format")
struct ServeLogFormatTests {
    @Test("--log-format json writes JSON lines to standard error; an unknown format is refused")
    func jsonLines() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let refused = try await cli.run(["serve", "--port", "0", "--log-format", "xml"])
        #expect(
            refused.status != 0 && refused.stderr.contains("--log-format must be text or json"), "\(refused.stderr)")

        let process = Process()
        let errors = Pipe()
        process.executableURL = try CLIExecutable.url
        process.arguments = [
            "serve", "--port", "0", "--data-dir", cli.directory.appendingPathComponent("relay").path, "--log-format",
            "json",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let line = await ChildProcess.firstLine(of: errors.fileHandleForReading)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(object?["label"] as? String == "confidant.relay", "\(line)")
        #expect(object?["level"] is String && object?["message"] is String && object?["time"] is String, "\(line)")
    }
}
