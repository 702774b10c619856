import ArgumentParser
import ConfidantCrypto

struct SeedKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed-key",
        abstract: "Compute the seed app's conversation key string from its stored key strings.",
        discussion: "As the seed's deriveSymmetricKey: base64(HKDF-SHA256(ECDH-P256, salt \"salt for key\", 32 bytes))."
    )

    @Option(name: .long, help: "Your private key string, as the seed app stored it.")
    var privateKey: String

    @Option(name: .long, help: "The peer's public key string, as published in their profile.")
    var peerPublicKey: String

    func run() async throws {
        print(try SeedChat.keyString(privateKey: privateKey, peerPublicKey: peerPublicKey))
    }
}
