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
    /// The peer's keys as this device knows them are the ones you verified.
    public var verified = false

    /// A row of the list.
    public init(
        peer: Contact, lastActivity: Date, unread: Int, preview: String, keyChangeWarning: String?,
        verified: Bool = false
    ) {
        self.peer = peer
        self.lastActivity = lastActivity
        self.unread = unread
        self.preview = preview
        self.keyChangeWarning = keyChangeWarning
        self.verified = verified
    }
}
