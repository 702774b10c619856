import Foundation

/// A message with attachments, a disappearing timer or a quote it replies to (payload kind 2).
public struct RichMessage: Sendable, Hashable, Codable {
    /// The text; nil for attachments alone.
    public var text: String?
    /// The files, in the order the sender gave them.
    public var attachments: [AttachmentPointer]
    /// Seconds after which every device deletes the message; nil keeps it.
    public var expiresAfter: Int?
    /// The message it answers; nil for one that answers none.
    public var replyTo: ReplyQuote?

    /// A message; give text, attachments or both.
    public init(
        text: String?, attachments: [AttachmentPointer] = [], expiresAfter: Int? = nil, replyTo: ReplyQuote? = nil
    ) {
        self.text = text
        self.attachments = attachments
        self.expiresAfter = expiresAfter
        self.replyTo = replyTo
    }

    private enum CodingKeys: String, CodingKey { case text, attachments, expiresAfter, replyTo }

    /// Reads the JSON a message carries, refusing values outside the documented bounds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        text = try container.decodeIfPresent(String.self, forKey: .text)
        attachments = try container.decodeIfPresent([AttachmentPointer].self, forKey: .attachments) ?? []
        expiresAfter = try container.decodeIfPresent(Int.self, forKey: .expiresAfter)
        replyTo = try container.decodeIfPresent(ReplyQuote.self, forKey: .replyTo)
    }

    /// Writes the JSON the message carries (docs/PROTOCOL.md §8); empty and absent fields are left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(text, forKey: .text)
        if !attachments.isEmpty { try container.encode(attachments, forKey: .attachments) }
        try container.encodeIfPresent(expiresAfter, forKey: .expiresAfter)
        try container.encodeIfPresent(replyTo, forKey: .replyTo)
    }
}
