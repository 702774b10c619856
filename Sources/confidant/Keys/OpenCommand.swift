import ArgumentParser
import ConfidantCrypto
import Foundation

struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Verify and decrypt an envelope (stdin) addressed to your device (stdout).",
        discussion: """
            Fails with the reason: unknown version or suite, truncated, not for this recipient, tampered, \
            bad signature. With --suite seed-legacy and key strings (--with-private-key, --from-public-key) \
            the input is raw S-block ciphertext as the seed app stored it.
            """
    )

    @Option(name: .long, help: "Your private key file.") var with: String?
    @Option(name: .long, help: "The sender's public identity (PEM).") var from: String?
    @Option(name: .long, help: "Only seed-legacy: read raw seed-app ciphertext with key strings.") var suite:
        EnvelopeSuite?
    @Option(name: .long, help: "seed-legacy: your private key string in the seed format.") var withPrivateKey: String?
    @Option(name: .long, help: "seed-legacy: the sender's public key string in the seed format.") var fromPublicKey:
        String?
    @Option(name: .long, help: "Your user id (default: the nil UUID).") var user: UUID?
    @Option(name: .long, help: "Envelope file (default: stdin).") var `in`: String?
    @Option(name: .long, help: "Plaintext file, created 0600 (default: stdout).") var out: String?
    @OptionGroup var passphrase: PassphraseOptions

    func validate() throws {
        if withPrivateKey != nil || fromPublicKey != nil {
            guard suite == .seedLegacy, withPrivateKey != nil, fromPublicKey != nil, with == nil, from == nil else {
                throw ValidationError(
                    "key strings go with --suite seed-legacy and need both --with-private-key and --from-public-key")
            }
        } else {
            guard with != nil, from != nil else { throw ValidationError("give --with KEYFILE and --from PUBLICKEY") }
        }
    }

    func run() async throws {
        let input = try FileIO.read(self.in)
        if let withPrivateKey, let fromPublicKey {
            if let warning = EnvelopeSuite.seedLegacy.warning { Terminal.printError(warning) }
            let keyString = try SeedChat.keyString(privateKey: withPrivateKey, peerPublicKey: fromPublicKey)
            try FileIO.write(
                Data(try SeedChat.crypt(input, keyString: keyString)), to: out, binary: false, secret: true)
            return
        }
        let envelope = try SealedEnvelope(serialized: input)
        if let warning = envelope.header.suite.warning { Terminal.printError(warning) }
        let recipient = try IdentityFiles.loadPrivate(with ?? "", passphrase: passphrase)
        let sender = try IdentityFiles.loadPublic(from ?? "")
        let message = try envelope.open(as: recipient, recipientUserID: user ?? noUser, from: sender)
        try FileIO.write(message, to: out, binary: false, secret: true)
    }
}
