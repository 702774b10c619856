import ArgumentParser
import ConfidantCrypto
import Foundation

struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Verify and decrypt an envelope addressed to your device.",
        discussion: "Fails with the reason: unknown version or suite, truncated, not for this recipient, tampered, bad signature."
    )

    @Option(name: .long, help: "Your private key file.")
    var key: String

    @Option(name: .long, help: "The sender's public identity (PEM).")
    var from: String

    @Option(name: .long, help: "Your user id (default: the nil UUID).")
    var user: UUID?

    @Option(name: .long, help: "Envelope file (default: stdin).")
    var `in`: String?

    @Option(name: .long, help: "Plaintext file, created 0600 (default: stdout).")
    var out: String?

    @OptionGroup var passphrase: PassphraseOptions

    func run() async throws {
        let envelope = try SealedEnvelope(serialized: FileIO.read(self.in))
        if let warning = envelope.header.suite.warning { Terminal.printError(warning) }
        let recipient = try IdentityFiles.loadPrivate(key, passphrase: passphrase)
        let sender = try IdentityFiles.loadPublic(from)
        let message = try envelope.open(as: recipient, recipientUserID: user ?? noUser, from: sender)
        try FileIO.write(message, to: out, binary: false, secret: true)
    }
}
