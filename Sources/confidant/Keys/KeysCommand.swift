import ArgumentParser
import ConfidantCrypto
import Foundation

/// `confidant keys …`: device identities and envelopes by hand — create a key, read it in the
/// formats other tools and the seed app use, seal and open envelopes, compare fingerprints.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Device keys and envelopes by hand: generate, public, seal, open, inspect, fingerprint.",
        subcommands: [
            KeygenCommand.self, Public.self, SeedConversation.self, SealCommand.self, OpenCommand.self,
            InspectCommand.self,
            FingerprintCommand.self,
        ])

    struct Public: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "public", abstract: "Print the public half of a private key file.")

        enum Format: String, ExpressibleByArgument, CaseIterable {
            /// The signed public identity as PEM: what others pass to `seal --to`.
            case pem
            /// The P-256 agreement key as a standard SubjectPublicKeyInfo PEM.
            case spki
            /// The P-256 agreement key in the seed app's percent-encoded base64 format.
            case seed
        }

        @Argument(help: "The private key file.") var keyFile: String
        @Option(
            name: .long,
            help: "pem (the public identity, default), spki (standard P-256 PEM) or seed (the seed app's key string).")
        var format: Format = .pem
        @OptionGroup var passphrase: PassphraseOptions

        func run() async throws {
            let identity = try IdentityFiles.loadPrivate(keyFile, passphrase: passphrase).publicIdentity
            switch format {
            case .pem: print(identity.pemRepresentation)
            case .spki: print(identity.agreementKey.pemRepresentation)
            case .seed: print(identity.seedKeyString)
            }
        }
    }

    struct SeedConversation: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "seed-conversation",
            abstract: "The seed app's conversation key string from its stored key strings.",
            discussion:
                "As the seed's deriveSymmetricKey: base64(HKDF-SHA256(ECDH-P256, salt \"salt for key\", 32 bytes)).")

        @Option(name: .long, help: "Your private key string, as the seed app stored it.") var privateKey: String
        @Option(name: .long, help: "The peer's public key string, as published in their profile.") var peerPublicKey:
            String

        func run() async throws {
            print(try SeedChat.keyString(privateKey: privateKey, peerPublicKey: peerPublicKey))
        }
    }
}
