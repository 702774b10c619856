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
    /// The key's short fingerprint.
    public var fingerprint: String { IdentityFingerprint(identity).description }

    /// A key as recorded.
    public init(identity: PublicIdentity, firstSeen: Date, retiredAt: Date?) {
        self.identity = identity
        self.firstSeen = firstSeen
        self.retiredAt = retiredAt
    }
}
