import ArgumentParser
import ConfidantCrypto
import Foundation

struct KeygenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Create a device identity: a passphrase-protected private key file (0600) and its public PEM.",
        discussion: """
            The key file holds a P-256 and an X25519 agreement key, an X-Wing key and an Ed25519 \
            signing key that signs them, encrypted with AES-256-GCM under a key derived from the \
            passphrase by scrypt (N=2^17, r=8, p=1 unless --scrypt-log2n says otherwise).
            """,
        aliases: ["keygen"]
    )

    @Option(name: .long, help: "Where to write the private key file.")
    var out: String

    @Option(name: .long, help: "Where to write the public identity (PEM); default: OUT.pub.")
    var publicOut: String?

    @Option(name: .long, help: "scrypt cost as log2 N (10…20).")
    var scryptLog2n: UInt8 = ScryptParameters.interactive.log2N

    @OptionGroup var passphrase: PassphraseOptions

    func run() async throws {
        let parameters = try ScryptParameters(log2N: scryptLog2n, r: ScryptParameters.interactive.r, p: 1)
        let secret = try passphrase.passphrase(prompt: "New passphrase: ", confirm: true)
        let identity = try PrivateIdentity.generate()
        let publicPath = publicOut ?? out + ".pub"
        if FileManager.default.fileExists(atPath: publicPath) { throw PrivateFileError.exists(path: publicPath) }
        try IdentityKeyFile.write(identity, to: URL(fileURLWithPath: out), passphrase: secret, parameters: parameters)
        try FileIO.write(Data((identity.publicIdentity.pemRepresentation + "\n").utf8), to: publicPath, binary: false)
        print("private key:  \(out) (mode 0600)")
        print("public key:   \(publicPath)")
        print("device id:    \(identity.deviceID.canonicalString)")
        print("fingerprint:  \(IdentityFingerprint(identity.publicIdentity))")
    }
}
