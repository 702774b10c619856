import ConfidantCrypto
import Crypto
import Foundation

/// The keystream-reuse attack run on two seed-legacy messages of one conversation, for the report.
public struct ReuseDemonstration: Sendable {
    public let first: String
    public let second: String
    public let recovered: String
    public let fragments: [KeystreamReuse.Fragment]

    public static let exampleFirst =
        "Meet me at the station at nine, and bring the documents with you. "
        + "Привет, завтра встреча в девять, не опаздывай."
    public static let exampleSecond =
        "The password for the archive is tulip-42; change it after the meeting. "
        + "Это всё, что нужно знать."

    /// Encrypts both messages the way the seed app did (one conversation key for both) and attacks them.
    public init(first: String = exampleFirst, second: String = exampleSecond) throws {
        let alice = P256.KeyAgreement.PrivateKey()
        let bob = P256.KeyAgreement.PrivateKey()
        let key = try SeedChat.keyString(privateKey: alice, peerPublicKey: bob.publicKey)
        let c1 = try SeedChat.crypt(Array(first.utf8), keyString: key)
        let c2 = try SeedChat.crypt(Array(second.utf8), keyString: key)
        self.first = first
        self.second = second
        recovered = String(
            decoding: KeystreamReuse.recover(known: Array(first.utf8), ciphertext: c1, other: c2), as: UTF8.self)
        fragments = KeystreamReuse.dragCribs(c1, c2, limit: 12)
    }
}
