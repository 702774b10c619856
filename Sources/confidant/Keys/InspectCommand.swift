import ArgumentParser
import ConfidantCrypto
import Foundation

struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show an envelope's cleartext header: what a relay sees, without any key."
    )

    @Argument(help: "Envelope file (default: stdin).")
    var envelope: String?

    func run() async throws {
        let parsed = try SealedEnvelope(serialized: FileIO.read(envelope))
        let header = parsed.header
        let rows: [(String, String)] = [
            ("version", "\(EnvelopeHeader.version)"),
            ("suite", header.suite.name),
            ("signed", header.isSigned ? "yes" : "no"),
            ("sender", header.sender.description),
            ("recipient", header.recipient.description),
            ("message id", header.messageID.canonicalString),
            ("timestamp", ISO8601DateFormatter().string(from: header.timestamp)),
            ("encapsulated key", "\(parsed.encapsulatedKey.count) bytes"),
            ("ciphertext", "\(parsed.ciphertext.count) bytes"),
        ]
        for (name, value) in rows { print(name.padding(toLength: 18, withPad: " ", startingAt: 0) + value) }
    }
}
