import Foundation
import Logging

/// Delivers sign-in codes by e-mail.
protocol CodeMailer: Sendable {
    func send(code: String, to email: String, logger: Logger) async throws
}

/// Without SMTP configured: each message is written to `<data-dir>/outbox/` and the code to the
/// server log, both marked as development mode. Not for production: anyone who reads the log or
/// the directory can sign in as anyone.
struct DevelopmentOutbox: CodeMailer {
    let directory: URL

    func send(code: String, to email: String, logger: Logger) async throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let name = "\(Int(Date().timeIntervalSince1970 * 1000))-\(UUID().uuidString.prefix(8)).eml"
        let message = """
            X-Confidant-Development-Mode: no SMTP server is configured; this message was not sent
            To: \(email)
            Subject: Your Confidant sign-in code

            Your Confidant sign-in code is \(code). It expires in 10 minutes and works once.

            """
        guard
            FileManager.default.createFile(
                atPath: directory.appendingPathComponent(name).path, contents: Data(message.utf8),
                attributes: [.posixPermissions: 0o600])
        else {
            throw APIFailure(.mailUnavailable, "The server cannot store the sign-in code message.")
        }
        logger.warning(
            // The code itself stays out of the log, as every secret does: the file is the operator's alone.
            "DEVELOPMENT MODE (no SMTP configured): a sign-in code for \(email) is in \(directory.path)/\(name)"
        )
    }
}
