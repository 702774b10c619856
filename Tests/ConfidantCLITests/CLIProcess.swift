import ConfidantTestSupport
import Foundation

/// Runs the built `confidant` executable as a user would, in a temporary working directory.
struct CLIProcess {
    struct Result {
        let status: Int32
        let stdout: Data
        let stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    let directory: URL
    var environment: [String: String]

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        environment = ProcessInfo.processInfo.environment
        environment["CONFIDANT_PASSPHRASE"] = "test passphrase"
        environment["NO_COLOR"] = "1"
        environment["CONFIDANT_HOME"] = directory.appendingPathComponent("home").path
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    static var executable: URL { get throws { try CLIExecutable.url } }

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// Creates `NAME.key` and `NAME.key.pub` for each name, with cheap scrypt parameters.
    func makeIdentities(_ names: String...) async throws {
        for name in names {
            let result = try await run(["keys", "generate", "--out", "\(name).key", "--scrypt-log2n", "10"])
            guard result.status == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: result.stderr])
            }
        }
    }

    /// Runs the CLI and types `lines` into it, each when its producer returns.
    @discardableResult
    func run(_ arguments: [String], answering lines: [@Sendable () async throws -> String]) async throws -> Result {
        let output = try await ChildProcess.run(
            try Self.executable, arguments, answering: lines, environment: environment, directory: directory)
        return Result(status: output.status, stdout: output.stdout, stderr: output.errorText)
    }

    /// `account register` as a user does it: the password, then the code the relay mails (read
    /// from its development outbox in `dataDirectory`).
    func register(
        profile: String, server: String, email: String, name: String, password: String, dataDirectory: URL,
        extra: [String] = []
    ) async throws -> Result {
        let started = Date()
        return try await run(
            [
                "account", "register", "--profile", profile, "--server", server, "--email", email, "--name", name,
                "--password-stdin", "--scrypt-log2n", "10",
            ] + extra,
            answering: [
                { password },
                { try await SignInOutbox.code(dataDirectory: dataDirectory, for: email, sentAfter: started) },
            ])
    }

    @discardableResult
    func run(_ arguments: [String], stdin: Data = Data(), executable: URL? = nil) async throws -> Result {
        let output = try await ChildProcess.run(
            try executable ?? Self.executable, arguments, stdin: stdin, environment: environment, directory: directory)
        return Result(status: output.status, stdout: output.stdout, stderr: output.errorText)
    }
}
