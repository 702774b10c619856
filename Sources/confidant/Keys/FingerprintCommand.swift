import ArgumentParser
import ConfidantCrypto

struct FingerprintCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fingerprint",
        abstract:
            "The safety number of two public identities (the same digits on both sides), or one key's fingerprint.")

    @Argument(help: "A public identity PEM file.") var publicKeyA: String
    @Argument(help: "The other party's public identity PEM file.") var publicKeyB: String?

    func run() async throws {
        let a = try IdentityFiles.loadPublic(publicKeyA)
        guard let publicKeyB else {
            print("device id:    \(a.deviceID.canonicalString)")
            print("fingerprint:  \(IdentityFingerprint(a))")
            return
        }
        let b = try IdentityFiles.loadPublic(publicKeyB)
        print(SafetyNumber(a, b).grouped)
    }
}
