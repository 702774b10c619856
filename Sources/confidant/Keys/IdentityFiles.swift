import ArgumentParser
import ConfidantCrypto
import Foundation

enum IdentityFiles {
    static func loadPublic(_ path: String) throws -> PublicIdentity {
        try PublicIdentity(pemRepresentation: FileIO.readText(path))
    }

    static func loadPrivate(_ path: String, passphrase: PassphraseOptions) throws -> PrivateIdentity {
        try IdentityKeyFile.read(from: URL(fileURLWithPath: path), passphrase: passphrase.passphrase())
    }
}

// The CLI takes ids as arguments; UUID and ArgumentParser are both not ours.
// swift-format-ignore: AvoidRetroactiveConformances
extension UUID: @retroactive ExpressibleByArgument {
    public init?(argument: String) { self.init(uuidString: argument) }
}

extension EnvelopeSuite: ExpressibleByArgument {
    public init?(argument: String) { self.init(name: argument) }
    public static var allValueStrings: [String] { allCases.map(\.name) }
}

/// The nil UUID, used for user ids when keys are used without a server.
let noUser = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
