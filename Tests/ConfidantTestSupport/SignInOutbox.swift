import Foundation

/// Reads sign-in codes from a relay's development outbox (`<data-dir>/outbox/`), as a user would
/// read their mail.
package enum SignInOutbox {
    package struct NoCode: Error, CustomStringConvertible {
        package let description: String
    }

    /// The code in the newest message of a relay's outbox.
    package static func latestCode(_ relay: some RelayEndpoint) throws -> String {
        try latestCode(dataDirectory: relay.dataDirectory)
    }

    /// The code in the newest message.
    package static func latestCode(dataDirectory: URL) throws -> String {
        let outbox = dataDirectory.appendingPathComponent("outbox")
        guard let newest = try FileManager.default.contentsOfDirectory(atPath: outbox.path).sorted().last else {
            throw NoCode(description: "no message in \(outbox.path)")
        }
        let text = try String(contentsOf: outbox.appendingPathComponent(newest), encoding: .utf8)
        guard let range = text.range(of: "sign-in code is ") else { throw NoCode(description: "no code in \(newest)") }
        return String(text[range.upperBound...].prefix { $0 != "." })
    }
}
