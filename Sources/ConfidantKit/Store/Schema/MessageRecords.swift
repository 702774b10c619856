import ConfidantCrypto
import Foundation
import GRDB

/// `message`: one line of a conversation, the body sealed.
struct MessageRecord: StoreRecord {
    static let databaseTableName = "message"

    /// Local order of arrival; nil until inserted.
    var seq: Int64?
    var messageID: UUID
    var peerID: UUID
    var direction: ChatMessage.Direction
    var senderDevice: UUID?
    var sentAt: Date
    /// The UTF-8 text, sealed; nil for an unreadable message.
    var body: Data?
    var unreadableReason: String?
    var state: MessageState
    var failure: String?
    var isRead: Bool
    /// The envelope version that carried a received message.
    var envelope: Int?
    /// When its author last edited it.
    var editedAt: Date?
    /// When its author deleted it for everyone (the body is gone then).
    var deletedAt: Date?
    /// When it disappears from this device.
    var expiresAt: Date?
    /// What a notice is about (nil for messages, and for notices stored before v8).
    var noticeKind: ChatMessage.NoticeKind?
    /// The member who wrote a message to a group (the peer is the group then).
    var authorID: UUID?
    /// Everyone's latest reaction (`StoredReactions`), sealed; nil when nobody reacted.
    var reactions: Data? = nil
    /// The message it replies to, and the quote it carries (sealed).
    var replyTo: UUID? = nil
    var replyExcerpt: Data? = nil

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case seq
        case messageID = "message_id"
        case peerID = "peer_id"
        case direction
        case senderDevice = "sender_device"
        case sentAt = "sent_at"
        case body
        case
            unreadableReason = "unreadable_reason"
        case state, failure
        case isRead = "is_read"
        case envelope
        case editedAt = "edited_at"
        case deletedAt = "deleted_at"
        case expiresAt = "expires_at"
        case noticeKind = "notice_kind"
        case authorID = "author_id"
        case reactions
        case replyTo = "reply_to"
        case replyExcerpt = "reply_excerpt"
    }

    typealias Columns = CodingKeys
}

extension MessageRecord {
    init(row: Row) throws {
        seq = try row.value(CodingKeys.seq)
        messageID = try row.uuid(CodingKeys.messageID)
        peerID = try row.uuid(CodingKeys.peerID)
        direction = try row.value(CodingKeys.direction)
        senderDevice = try row.uuidIfPresent(CodingKeys.senderDevice)
        sentAt = try row.date(CodingKeys.sentAt)
        body = try row.value(CodingKeys.body)
        unreadableReason = try row.value(CodingKeys.unreadableReason)
        state = try row.value(CodingKeys.state)
        failure = try row.value(CodingKeys.failure)
        isRead = try row.value(CodingKeys.isRead)
        envelope = try row.value(CodingKeys.envelope)
        editedAt = try row.dateIfPresent(CodingKeys.editedAt)
        deletedAt = try row.dateIfPresent(CodingKeys.deletedAt)
        expiresAt = try row.dateIfPresent(CodingKeys.expiresAt)
        noticeKind = try row.value(CodingKeys.noticeKind)
        authorID = try row.uuidIfPresent(CodingKeys.authorID)
        reactions = try row.value(CodingKeys.reactions)
        replyTo = try row.uuidIfPresent(CodingKeys.replyTo)
        replyExcerpt = try row.value(CodingKeys.replyExcerpt)
    }
}

/// `attachment`: a file a message carries, its pointer (key, digest, blob) sealed. The encrypted
/// file, once this device has it, is `attachments/<attachment id>` in the profile.
struct AttachmentRecord: StoreRecord {
    static let databaseTableName = "attachment"

    var attachmentID: UUID
    var messageID: UUID
    var peerID: UUID
    var direction: ChatMessage.Direction
    var position: Int
    /// The JSON of `AttachmentPointer`, sealed.
    var sealed: Data

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case attachmentID = "attachment_id"
        case messageID = "message_id"
        case peerID = "peer_id"
        case direction, position, sealed
    }

    typealias Columns = CodingKeys
}

/// `conversation_setting`: per conversation, the disappearing-message timer.
struct ConversationSettingRecord: StoreRecord {
    static let databaseTableName = "conversation_setting"

    var peerID: UUID
    /// Seconds; nil when messages stay.
    var expiresAfter: Int?
    /// When the timer in force was set (by the control's time when it came from a device of
    /// either side); nil before it was recorded.
    var setAt: Date?

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case peerID = "peer_id"
        case expiresAfter = "expires_after"
        case setAt = "set_at"
    }
}
