import ConfidantCrypto
import Foundation

/// The plaintext inside a chat envelope (docs/PROTOCOL.md §8).
///
/// ```
/// u8 version = 1 | u8 kind | 16 bytes conversation user id | body
/// kind 1 text     body = UTF-8 text
/// kind 2 message  body = JSON {text?, attachments?, expiresAfter?, replyTo?}
/// kind 3 receipt  body = JSON {type: "delivered" | "read", messageIds}
/// kind 4 edit     body = JSON {messageId, text}
/// kind 5 deletion body = JSON {messageId}
/// kind 6 timer    body = JSON {expiresAfter}   (seconds; 0 turns disappearing messages off)
/// kind 7 group changes  conversation = the group id; body = u16 n | n × (u16 length | change)
/// kind 8 group message  conversation = the group id; body = JSON {messageId, text, replyTo?}
/// kind 9 sender key     conversation = the group id; body = a distribution (§10.4, 101 bytes)
/// kind 10 reaction      body = JSON {messageId, emoji?}   (no emoji: the reaction is removed)
/// ```
/// The conversation id is the user the message was written to, so the sender's own other
/// devices, which see only "from me to this device", know which conversation it belongs to. A
/// text message without attachments, a timer or a reply is kind 1, as it always was; kinds 2–6,
/// 8 and 10 are JSON.
public struct ChatPayload: Sendable, Hashable {
    /// The payload format version.
    public static let version: UInt8 = 1
    /// The kind byte of a text message.
    public static let textKind: UInt8 = 1
    /// The largest text that still fits one 64 KiB envelope after padding and overhead.
    public static let maximumTextBytes = 61_440
    /// The largest payload (any kind) that fits one envelope.
    public static let maximumBytes = 61_440 + 18
    /// The most attachments one message carries.
    public static let maximumAttachments = 32
    /// The most message ids one receipt names.
    public static let maximumReceiptIDs = 1_000

    /// What a payload carries.
    public enum Content: Sendable, Hashable {
        /// A text message (kind 1).
        case text(String)
        /// A message with attachments or a disappearing timer (kind 2).
        case message(RichMessage)
        /// The recipient's device got, or its user read, the messages named (kind 3).
        case receipt(Receipt)
        /// The author's new text for one of their messages (kind 4).
        case edit(messageID: UUID, text: String)
        /// The author deleted one of their messages for everyone (kind 5).
        case deletion(messageID: UUID)
        /// The conversation's disappearing-message timer, in seconds; 0 is off (kind 6).
        case timer(expiresAfter: Int)
        /// Signed membership changes of the group the conversation id names, each as
        /// docs/PROTOCOL.md §10.2 writes it (kind 7): a new change, or a new member's history.
        case groupChanges([Data])
        /// A message to the group the conversation id names, with the id every member's copy
        /// shares (kind 8).
        case groupMessage(messageID: UUID, text: String, replyTo: ReplyQuote? = nil)
        /// The sender device's sending chain for the group the conversation id names, sent over
        /// the pairwise session (kind 9): the group's messages from it open from then on.
        case senderKey(SenderKeyDistribution)
        /// The sender's reaction to a message of the conversation: one emoji, or nil to take
        /// theirs back (kind 10).
        case reaction(messageID: UUID, emoji: String?)
    }

    /// The user the message was written to: the peer, as the sender's own devices see it too.
    public let conversation: UUID
    /// What it carries.
    public let content: Content

    /// A text message to `conversation`.
    public init(conversation: UUID, text: String) {
        self.conversation = conversation
        content = .text(text)
    }

    /// A payload to `conversation`.
    public init(conversation: UUID, content: Content) {
        self.conversation = conversation
        self.content = content
    }

    /// The message text, for text messages and messages with attachments.
    public var text: String? {
        switch content {
        case .text(let text): text
        case .message(let message): message.text
        case .groupMessage(_, let text, _): text
        default: nil
        }
    }

    /// The bytes that are sealed.
    public var serialized: Data {
        get throws {
            var bytes = Data([Self.version, kind])
            bytes += withUnsafeBytes(of: conversation.uuid) { Data($0) }
            switch content {
            case .text(let text): bytes += Data(text.utf8)
            case .message(let message): bytes += try Self.encoder.encode(message)
            case .receipt(let receipt): bytes += receipt.json
            case .edit(let id, let text): bytes += try Self.encoder.encode(Edit(messageId: id, text: text))
            case .deletion(let id): bytes += try Self.encoder.encode(Deletion(messageId: id))
            case .timer(let seconds): bytes += try Self.encoder.encode(Timer(expiresAfter: seconds))
            case .groupChanges(let changes): bytes += try Self.changeList(changes)
            case .groupMessage(let id, let text, let reply):
                bytes += try Self.encoder.encode(GroupMessageBody(messageId: id, text: text, replyTo: reply))
            case .senderKey(let distribution): bytes += distribution.serialized
            case .reaction(let id, let emoji):
                bytes += try Self.encoder.encode(ReactionBody(messageId: id, emoji: emoji))
            }
            return bytes
        }
    }

    private var kind: UInt8 {
        switch content {
        case .text: 1
        case .message: 2
        case .receipt: 3
        case .edit: 4
        case .deletion: 5
        case .timer: 6
        case .groupChanges: 7
        case .groupMessage: 8
        case .senderKey: 9
        case .reaction: 10
        }
    }

    /// Reads an opened envelope's plaintext.
    public init(serialized data: Data) throws(ChatPayloadError) {
        let bytes = [UInt8](data)
        guard bytes.count >= 18 else { throw .truncated }
        guard bytes[0] == Self.version else { throw .unsupportedVersion(bytes[0]) }
        let id = bytes[2..<18]
        conversation = id.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        let body = Data(bytes[18...])
        switch bytes[1] {
        case 1:
            guard let text = String(validating: bytes[18...], as: UTF8.self) else { throw .invalidText }
            content = .text(text)
        case 2:
            let message = try Self.decode(RichMessage.self, body)
            guard message.attachments.count <= Self.maximumAttachments else {
                throw .invalidContent("more than \(Self.maximumAttachments) attachments")
            }
            guard message.text != nil || !message.attachments.isEmpty else {
                throw .invalidContent("a message with neither text nor attachments")
            }
            if let seconds = message.expiresAfter, !DisappearingTimer.accepts(seconds) {
                throw .invalidContent("a disappearing timer of \(seconds) seconds")
            }
            if let quote = message.replyTo, !quote.isWithinBounds {
                throw .invalidContent("a reply whose quote is longer than \(ReplyQuote.maximumCharacters) characters")
            }
            content = .message(message)
        case 3:
            let receipt = try Self.decode(Receipt.self, body)
            guard (1...Self.maximumReceiptIDs).contains(receipt.messageIDs.count) else {
                throw .invalidContent("a receipt for \(receipt.messageIDs.count) messages")
            }
            content = .receipt(receipt)
        case 4:
            let edit = try Self.decode(Edit.self, body)
            content = .edit(messageID: edit.messageId, text: edit.text)
        case 5:
            content = .deletion(messageID: try Self.decode(Deletion.self, body).messageId)
        case 6:
            let seconds = try Self.decode(Timer.self, body).expiresAfter
            guard seconds == 0 || DisappearingTimer.accepts(seconds) else {
                throw .invalidContent("a disappearing timer of \(seconds) seconds")
            }
            content = .timer(expiresAfter: seconds)
        case 7:
            content = .groupChanges(try Self.changes(in: bytes[18...]))
        case 8:
            let message = try Self.decode(GroupMessageBody.self, body)
            guard !message.text.isEmpty, message.text.utf8.count <= Self.maximumTextBytes else {
                throw .invalidContent("a group message of \(message.text.utf8.count) bytes of text")
            }
            if let quote = message.replyTo, !quote.isWithinBounds {
                throw .invalidContent("a reply whose quote is longer than \(ReplyQuote.maximumCharacters) characters")
            }
            content = .groupMessage(messageID: message.messageId, text: message.text, replyTo: message.replyTo)
        case 9:
            let distribution: SenderKeyDistribution
            do {
                distribution = try SenderKeyDistribution(serialized: body)
            } catch {
                throw .invalidContent("\(error)")
            }
            guard distribution.groupID == conversation else {
                throw .invalidContent("a sender key for another group than the payload names")
            }
            content = .senderKey(distribution)
        case 10:
            let reaction = try Self.decode(ReactionBody.self, body)
            if let emoji = reaction.emoji, !ReactionEmoji.accepts(emoji) {
                throw .invalidContent("a reaction that is not one emoji")
            }
            content = .reaction(messageID: reaction.messageId, emoji: reaction.emoji)
        default:
            throw .unsupportedKind(bytes[1])
        }
    }

    private struct Edit: Codable { let messageId: UUID, text: String }
    private struct GroupMessageBody: Codable {
        let messageId: UUID
        let text: String
        let replyTo: ReplyQuote?
    }
    private struct Deletion: Codable { let messageId: UUID }
    private struct Timer: Codable { let expiresAfter: Int }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ body: Data) throws(ChatPayloadError) -> T {
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw .invalidContent("the message body is not what its kind says (\(error))")
        }
    }
}

/// Why a payload could not be read.
public enum ChatPayloadError: Error, Equatable, CustomStringConvertible {
    case truncated
    case unsupportedVersion(UInt8)
    case unsupportedKind(UInt8)
    case invalidText
    case invalidContent(String)

    public var description: String {
        switch self {
        case .truncated: return "the message is shorter than its header"
        case .unsupportedVersion(let v): return "message format version \(v) is newer than this app"
        case .unsupportedKind(let k): return "message kind \(k) is not supported by this app"
        case .invalidText: return "the message text is not valid UTF-8"
        case .invalidContent(let why): return "the message is malformed: \(why)"
        }
    }
}

/// The disappearing-message timers a conversation may have.
public enum DisappearingTimer {
    /// The shortest timer: 5 seconds.
    public static let shortest = 5
    /// The longest timer: 4 weeks.
    public static let longest = 28 * 86_400

    /// Whether `seconds` is a timer a client sets or honours.
    public static func accepts(_ seconds: Int) -> Bool { (shortest...longest).contains(seconds) }

    /// "30 s", "5 min", "1 h", "1 day", "4 weeks".
    public static func describe(_ seconds: Int) -> String {
        switch seconds {
        case ..<60: "\(seconds) s"
        case ..<3600 where seconds % 60 == 0: "\(seconds / 60) min"
        case ..<86_400 where seconds % 3600 == 0: "\(seconds / 3600) h"
        case 604_800... where seconds % 604_800 == 0: seconds == 604_800 ? "1 week" : "\(seconds / 604_800) weeks"
        case 86_400... where seconds % 86_400 == 0: seconds == 86_400 ? "1 day" : "\(seconds / 86_400) days"
        default: "\(seconds) s"
        }
    }
}
