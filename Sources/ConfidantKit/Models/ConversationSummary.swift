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
    /// The user marked the conversation unread, and has not opened it since.
    public var markedUnread = false
    /// What the composer holds and has not sent, if anything.
    public var draft: ChatDraft?

    /// The unread count to show: at least one for a conversation marked unread.
    public var shownUnread: Int { markedUnread ? max(unread, 1) : unread }

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
