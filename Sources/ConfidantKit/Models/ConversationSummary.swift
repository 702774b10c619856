import Foundation

/// A row of the main screen: a peer, when you last heard from each other, and what is unread.
public struct ConversationSummary: Sendable, Hashable, Identifiable {
    public var id: UUID { peer.id }
    /// Who the conversation is with.
    public let peer: Contact
    /// When its last line was written.
    public let lastActivity: Date
    /// How many of the peer's messages are unread.
    public let unread: Int
    /// The last line, or its unreadable placeholder.
    public let preview: String
    /// The peer's key-change warning when it came after your last message to them.
    public let keyChangeWarning: String?
}
