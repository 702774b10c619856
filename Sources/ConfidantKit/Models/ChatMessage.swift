import Foundation

/// One line of a conversation: a message either way, or a notice such as a key change.
public struct ChatMessage: Sendable, Hashable, Identifiable {
    /// Who wrote a line: the peer, this account (from any of its devices), or the app (a notice).
    public enum Direction: Int, Sendable, Codable {
        case incoming = 0
        case outgoing = 1
        case notice = 2
    }

    /// Where a line stands.
    public enum Status: Sendable, Hashable {
        /// Received (incoming) or a notice.
        case received
        /// Waiting in the outbox for the server.
        case pending
        /// Stored by the server (✓).
        case sent
        /// A device of the recipient has it (✓✓).
        case delivered
        /// The recipient saw it (their read receipts are on).
        case read
        /// Not sent; the failure says why. `retry` queues it again.
        case failed(DeliveryFailure)
    }

    /// The message id (shared by the sender's copies); notices get a derived id.
    public let id: UUID
    /// Local order of arrival.
    public let sequence: Int64
    /// The user the conversation is with.
    public let peer: UUID
    /// Who wrote it.
    public let direction: Direction
    /// When the sender wrote it (its own clock).
    public let sentAt: Date
    /// The text, or nil when the message could not be read.
    public let text: String?
    /// Why the message could not be read.
    public let unreadableReason: String?
    /// Delivery state.
    public internal(set) var status: Status
    /// Whether the user has seen it (own lines and notices always are).
    public let isRead: Bool
    /// The envelope version that carried a received message: 2 for a forward-secret session
    /// (docs/PROTOCOL.md §9), 1 for a one-shot v1 envelope; nil for notices and own sends.
    public var envelopeVersion: Int? = nil
    /// The attached files, in the sender's order.
    public var attachments: [ChatAttachment] = []
    /// When its author last changed its text; nil when never edited.
    public var editedAt: Date? = nil
    /// Whether its author deleted it for everyone (its text and files are gone).
    public var isDeleted = false
    /// When every device deletes it (a disappearing message); nil when it stays.
    public var expiresAt: Date? = nil
    /// A pending message the server could not take yet: when it is tried again by itself.
    public var retryAt: Date? = nil
    /// Why the last attempt of a pending message did not get through.
    public var waitingReason: String? = nil
    /// What a notice is about; nil for messages, and for notices stored before kinds were kept.
    public var noticeKind: NoticeKind? = nil
    /// In a group (``peer`` is then the group id): the member who wrote an incoming message.
    public var author: UUID? = nil
    /// In a group, for a message this account wrote: how many of the other members have it and
    /// have read it.
    public var groupReceipts: GroupReceipts? = nil
    /// Everyone's reaction to it, oldest first (one per person).
    public var reactions: [ChatReaction] = []
    /// The message it answers, with the quote it carries.
    public var reply: ReplyQuote? = nil
    /// A reply whose message is not on this device, or was deleted for everyone: the quote
    /// stays, marked so.
    public var replyTargetGone = false

    /// What a notice line says something about.
    public enum NoticeKind: String, Sendable, Hashable, Codable {
        /// A device key of the peer (or of the account) changed: the warning screens show.
        case keyChange = "key-change"
        /// The conversation's disappearing timer was set or turned off.
        case timer
    }

    /// A notice that warns of a changed key — or one stored before kinds were kept, which only
    /// key changes were then.
    public var warnsOfKeyChange: Bool { direction == .notice && (noticeKind ?? .keyChange) == .keyChange }

    /// What a screen shows: the text, a "deleted" line, or a placeholder saying why there is none.
    public var displayText: String {
        if isDeleted { return "This message was deleted" }
        if let text { return text }
        if !attachments.isEmpty { return attachments.map { "📎 \($0.name)" }.joined(separator: ", ") }
        return "[unreadable message: \(unreadableReason ?? "unknown reason")]"
    }

    /// Whether it could not be read (rather than carrying only files, or being deleted).
    public var isUnreadable: Bool { text == nil && attachments.isEmpty && !isDeleted }
}
