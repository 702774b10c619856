import Foundation

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
