import ConfidantCrypto
import Foundation

/// One of a peer's device keys and what this profile has seen of it.
public struct KnownKey: Sendable, Hashable {
    public let identity: PublicIdentity
    public let firstSeen: Date
    public let retiredAt: Date?
    public var deviceID: UUID { identity.deviceID }
    public var fingerprint: String { IdentityFingerprint(identity).description }

    public init(identity: PublicIdentity, firstSeen: Date, retiredAt: Date?) {
        self.identity = identity
        self.firstSeen = firstSeen
        self.retiredAt = retiredAt
    }
}
