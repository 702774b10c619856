import ArgumentParser
import ConfidantCrypto
import Foundation

struct PublicKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pubkey",
        abstract: "Print the public half of a private key file."
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        /// The whole signed identity, `CONFIDANT PUBLIC IDENTITY`.
        case identity
        /// The P-256 agreement key as a standard SubjectPublicKeyInfo PEM.
        case p256
        /// The P-256 agreement key in the seed app's percent-encoded base64 format.
        case seed
    }

    @Option(name: .long, help: "The private key file.")
    var key: String

    @Option(name: .long, help: "identity (default), p256 (SPKI PEM) or seed (the seed app's key string).")
    var format: Format = .identity

    @OptionGroup var passphrase: PassphraseOptions

    func run() async throws {
        let identity = try IdentityFiles.loadPrivate(key, passphrase: passphrase).publicIdentity
        switch format {
        case .identity: print(identity.pemRepresentation)
        case .p256: print(identity.agreementKey.pemRepresentation)
        case .seed: print(identity.seedKeyString)
        }
    }
}
