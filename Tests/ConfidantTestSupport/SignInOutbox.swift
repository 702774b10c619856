import Foundation

/// Reads sign-in codes from a relay's development outbox (`<data-dir>/outbox`, used when no SMTP
/// server is configured), as a user reads them from their mail.
package enum SignInOutbox {
    package struct NoCode: Error, CustomStringConvertible {
        package let description: String
    }

    /// The code in the newest message of a relay's outbox (to `email`, when given).
    package static func latestCode(_ relay: some RelayEndpoint, for email: String? = nil) throws -> String {
        try latestCode(dataDirectory: relay.dataDirectory, for: email)
    }

    /// The code in the newest message (to `email`, when given: tests that sign users up at once
    /// on one relay must not take each other's codes).
    package static func latestCode(dataDirectory: URL, for email: String? = nil) throws -> String {
        let outbox = dataDirectory.appendingPathComponent("outbox")
        let names = try FileManager.default.contentsOfDirectory(atPath: outbox.path).sorted().reversed()
        for name in names {
            let text = try String(contentsOf: outbox.appendingPathComponent(name), encoding: .utf8)
            if let email, !text.contains("To: \(email.lowercased())\n") { continue }
            guard let range = text.range(of: "sign-in code is ") else {
                throw NoCode(description: "no code in \(name)")
            }
            return String(text[range.upperBound...].prefix { $0 != "." })
        }
        throw NoCode(description: "no message\(email.map { " to \($0)" } ?? "") in \(outbox.path)")
    }

    /// Every message's code, by the message's file name.
    package static func codes(dataDirectory: URL) throws -> [String: String] {
        let outbox = dataDirectory.appendingPathComponent("outbox")
        var codes: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: outbox.path) {
            let text = try String(contentsOf: outbox.appendingPathComponent(name), encoding: .utf8)
            guard let range = text.range(of: "sign-in code is ") else {
                throw NoCode(description: "no code in \(name)")
            }
            codes[name] = String(text[range.upperBound...].prefix { $0 != "." })
        }
        return codes
    }

    /// Waits for a code to `email` sent after `time` (file names start with the time they were
    /// written, in milliseconds), for at most `seconds`.
    package static func code(
        dataDirectory: URL, for email: String, sentAfter time: Date, within seconds: Double = 60
    ) async throws -> String {
        let outbox = dataDirectory.appendingPathComponent("outbox")
        let after = Int((time.timeIntervalSince1970 * 1000).rounded(.down))
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: outbox.path)) ?? []
            for name in names.sorted().reversed() {
                guard let sent = Int(name.prefix { $0 != "-" }), sent >= after,
                    let text = try? String(contentsOf: outbox.appendingPathComponent(name), encoding: .utf8),
                    text.contains("To: \(email.lowercased())\n"), let range = text.range(of: "sign-in code is ")
                else { continue }
                return String(text[range.upperBound...].prefix { $0 != "." })
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw NoCode(description: "no code to \(email) came within \(seconds) s in \(outbox.path)")
    }
}
