import ConfidantCrypto
import Foundation

/// Another user as this profile knows them.
public struct Contact: Sendable, Hashable, Identifiable, Codable {
    public let id: UUID
    public let email: String
    public let displayName: String

    public init(id: UUID, email: String, displayName: String) {
        self.id = id
        self.email = email
        self.displayName = displayName
    }
}

/// One line of a conversation: a message either way, or a notice such as a key change.
public struct ChatMessage: Sendable, Hashable, Identifiable {
    public enum Direction: Int, Sendable, Codable {
        case incoming = 0, outgoing = 1, notice = 2
    }

    public enum Status: Sendable, Hashable {
        /// Received (incoming) or a notice.
        case received
        /// Waiting in the outbox for the server.
        case pending
        /// Stored by the server.
        case sent
        /// Not sent; the reason says why. `retry` queues it again.
        case failed(String)
    }

    /// The message id (shared by the sender's copies); notices get a derived id.
    public let id: UUID
    /// Local order of arrival.
    public let sequence: Int64
    public let peer: UUID
    public let direction: Direction
    public let sentAt: Date
    /// The text, or nil when the message could not be read.
    public let text: String?
    /// Why the message could not be read.
    public let unreadableReason: String?
    public let status: Status
    public let isRead: Bool
    /// The envelope version that carried a received message: 2 for a forward-secret session
    /// (docs/PROTOCOL.md §9), 1 for a one-shot v1 envelope; nil for notices and own sends.
    public var envelopeVersion: Int? = nil

    /// What a screen shows: the text, or a placeholder saying why there is none.
    public var displayText: String {
        if let text { return text }
        return "[unreadable message: \(unreadableReason ?? "unknown reason")]"
    }
}

/// A row of the main screen: a peer, when you last heard from each other, and what is unread.
public struct ConversationSummary: Sendable, Hashable, Identifiable {
    public var id: UUID { peer.id }
    public let peer: Contact
    public let lastActivity: Date
    public let unread: Int
    public let preview: String
    /// The peer's key-change warning when it came after your last message to them.
    public let keyChangeWarning: String?
}

/// The profile's account on its server.
public struct AccountState: Sendable, Codable, Hashable {
    public var serverURL: URL
    public var userID: UUID
    public var deviceID: UUID
    public var email: String
    public var displayName: String
    /// The bearer token; nil after `logout`.
    public var token: String?
    public var tokenExpiresAt: Date?
}

/// One of a peer's device keys and what this profile has seen of it.
public struct KnownKey: Sendable, Hashable {
    public let identity: PublicIdentity
    public let firstSeen: Date
    public let retiredAt: Date?
    public var deviceID: UUID { identity.deviceID }
    public var fingerprint: String { IdentityFingerprint(identity).description }
}

/// The sessions with one peer device, bound to the identity (fingerprint) they were started with.
struct PeerSession {
    let user: UUID
    let device: UUID
    let fingerprint: String
    var record: SessionRecord
}
