import ArgumentParser
import ConfidantCrypto

struct FingerprintCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fingerprint",
        abstract: "Print the short fingerprint and device id of a public identity (PEM)."
    )

    @Argument(help: "A public identity PEM file.")
    var identity: String

    func run() async throws {
        let publicIdentity = try IdentityFiles.loadPublic(identity)
        print("device id:    \(publicIdentity.deviceID.uuidString.lowercased())")
        print("fingerprint:  \(IdentityFingerprint(publicIdentity))")
    }
}
