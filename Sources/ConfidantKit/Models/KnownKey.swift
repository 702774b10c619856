import ConfidantCrypto
import Foundation

/// One of a peer's device keys and what this profile has seen of it.
public struct KnownKey: Sendable, Hashable {
    /// The key.
    public let identity: PublicIdentity
    /// When this profile first saw it.
    public let firstSeen: Date
    /// When it stopped being current (replaced or removed); nil while it is.
    public let retiredAt: Date?
    /// The device the key belongs to.
    public var deviceID: UUID { identity.deviceID }
    /// The key's short fingerprint (what its sessions are stored under), worked out once.
    public let fingerprint: String

    /// A key as recorded.
    public init(identity: PublicIdentity, firstSeen: Date, retiredAt: Date?) {
        self.init(
            identity: identity, fingerprint: IdentityFingerprint(identity).description, firstSeen: firstSeen,
            retiredAt: retiredAt)
    }

    /// A key whose fingerprint is known already (`ParsedIdentities` keeps it with the parsed key):
    /// opening a message asked for it every time, a SHA-256 of the whole key.
    init(identity: PublicIdentity, fingerprint: String, firstSeen: Date, retiredAt: Date?) {
        self.identity = identity
        self.fingerprint = fingerprint
        self.firstSeen = firstSeen
        self.retiredAt = retiredAt
    }
}
