import ArgumentParser
import ConfidantCrypto
import Foundation

struct SealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal",
        abstract: "Encrypt a message into an envelope for one device.",
        discussion: """
            Suites: p256-aes256gcm (default; HPKE Auth mode), x25519-chachapoly (HPKE Auth mode), \
            xwing-aes256gcm (post-quantum hybrid, HPKE Base mode, always signed), seed-legacy (the seed \
            app's cipher: no integrity, one keystream per conversation; must be named, prints a warning).
            """
    )

    @Option(name: .long, help: "Your private key file.")
    var key: String

    @Option(name: .long, help: "The recipient's public identity (PEM).")
    var to: String

    @Option(name: .long, help: "Cipher suite.")
    var suite: EnvelopeSuite = .default

    @Flag(name: .long, help: "Add an Ed25519 sender signature.")
    var sign = false

    @Option(name: .long, help: "Your user id (default: the nil UUID, for use without a server).")
    var fromUser: UUID?

    @Option(name: .long, help: "The recipient's user id (default: the nil UUID).")
    var toUser: UUID?

    @Option(name: .long, help: "Message file (default: stdin).")
    var `in`: String?

    @Option(name: .long, help: "Envelope file (default: stdout).")
    var out: String?

    @OptionGroup var passphrase: PassphraseOptions

    func run() async throws {
        if let warning = suite.warning { Terminal.printError(warning) }
        let sender = try IdentityFiles.loadPrivate(key, passphrase: passphrase)
        let recipient = try IdentityFiles.loadPublic(to)
        let message = try FileIO.read(self.in)
        let envelope = try SealedEnvelope.seal(
            message, from: sender, senderUserID: fromUser ?? noUser, to: recipient, recipientUserID: toUser ?? noUser,
            suite: suite, signed: sign)
        try FileIO.write(envelope.serialized, to: out, binary: true)
    }
}
