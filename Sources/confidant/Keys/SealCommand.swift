import ArgumentParser
import ConfidantCrypto
import Foundation

struct SealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal",
        abstract: "Encrypt a message (stdin) into an envelope for one device (stdout).",
        discussion: """
            Suites: p256-aesgcm (default; HPKE Auth mode), x25519-chachapoly (HPKE Auth mode), \
            xwing-aesgcm (post-quantum hybrid, HPKE Base mode, always signed), seed-legacy (the seed \
            app's cipher: no integrity, one keystream per conversation; must be named, prints a warning). \
            With --suite seed-legacy and key strings (--from-private-key, --to-public-key) the output is \
            the raw S-block ciphertext exactly as the seed app stored it.
            """
    )

    @Option(name: .long, help: "Your private key file.") var from: String?
    @Option(name: .long, help: "The recipient's public identity (PEM).") var to: String?
    @Option(name: .long, help: "Cipher suite.") var suite: EnvelopeSuite = .default
    @Option(name: .long, help: "seed-legacy: your private key string in the seed format.") var fromPrivateKey: String?
    @Option(name: .long, help: "seed-legacy: the recipient's public key string in the seed format.") var toPublicKey:
        String?
    @Flag(name: .long, help: "Add an Ed25519 sender signature.") var sign = false
    @Option(name: .long, help: "Your user id (default: the nil UUID, for use without a server).") var fromUser: UUID?
    @Option(name: .long, help: "The recipient's user id (default: the nil UUID).") var toUser: UUID?
    @Option(name: .long, help: "Message file (default: stdin).") var `in`: String?
    @Option(name: .long, help: "Envelope file (default: stdout).") var out: String?
    @OptionGroup var passphrase: PassphraseOptions

    func validate() throws {
        let keyStrings = fromPrivateKey != nil || toPublicKey != nil
        if keyStrings {
            guard suite == .seedLegacy, fromPrivateKey != nil, toPublicKey != nil, from == nil, to == nil else {
                throw ValidationError(
                    "key strings go with --suite seed-legacy and need both --from-private-key and --to-public-key")
            }
        } else {
            guard from != nil, to != nil else { throw ValidationError("give --from KEYFILE and --to PUBLICKEY") }
        }
    }

    func run() async throws {
        if let warning = suite.warning { Terminal.printError(warning) }
        let message = try FileIO.read(self.in)
        if let fromPrivateKey, let toPublicKey {
            let keyString = try SeedChat.keyString(privateKey: fromPrivateKey, peerPublicKey: toPublicKey)
            try FileIO.write(Data(try SeedChat.crypt(message, keyString: keyString)), to: out, binary: true)
            return
        }
        let sender = try IdentityFiles.loadPrivate(from ?? "", passphrase: passphrase)
        let recipient = try IdentityFiles.loadPublic(to ?? "")
        let envelope = try SealedEnvelope.seal(
            message, from: sender, senderUserID: fromUser ?? noUser, to: recipient, recipientUserID: toUser ?? noUser,
            suite: suite, signed: sign)
        try FileIO.write(envelope.serialized, to: out, binary: true)
    }
}
