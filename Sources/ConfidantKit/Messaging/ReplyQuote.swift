import Foundation

/// What a reply quotes (docs/PROTOCOL.md §8, kind 2 `replyTo`): the message it answers, by id, and
/// a short excerpt of it sealed inside the reply, so that the quote shows even where the quoted
/// message is gone or never arrived.
public struct ReplyQuote: Sendable, Hashable, Codable {
    /// The longest excerpt, in characters.
    public static let maximumCharacters = 200
    /// The longest excerpt in UTF-8 (a reader refuses more).
    public static let maximumBytes = 800

    /// The message replied to.
    public let messageID: UUID
    /// The start of its text, as its sender saw it.
    public let excerpt: String

    /// A quote of `messageID`; the excerpt is cut to ``maximumCharacters`` (with "…").
    public init(messageID: UUID, excerpt: String) {
        self.messageID = messageID
        self.excerpt =
            excerpt.count > Self.maximumCharacters ? String(excerpt.prefix(Self.maximumCharacters - 1)) + "…" : excerpt
    }

    /// A quote of `message`: its text, or the names of the files it carries alone.
    public init(of message: ChatMessage) {
        let excerpt = message.text ?? message.attachments.map { "📎 \($0.name)" }.joined(separator: ", ")
        self.init(messageID: message.id, excerpt: excerpt.isEmpty ? "…" : excerpt)
    }

    /// Whether a received excerpt is within the bounds.
    var isWithinBounds: Bool {
        excerpt.count <= Self.maximumCharacters && excerpt.utf8.count <= Self.maximumBytes
    }

    private enum CodingKeys: String, CodingKey {
        case messageID = "messageId"
        case excerpt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        messageID = try container.decode(UUID.self, forKey: .messageID)
        excerpt = try container.decode(String.self, forKey: .excerpt)
    }
}
