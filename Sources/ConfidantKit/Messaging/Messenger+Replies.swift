import ConfidantCrypto
import Foundation

extension Messenger {
    /// Sends a reply to a message of the conversation with `contact` (theirs or yours): the new
    /// message carries the message's id and the start of its text (``ReplyQuote``), sealed like
    /// the rest, so the quote shows on every device even where the message itself is gone. Sent
    /// as ``send(_:attachments:to:confirmKeyChange:progress:)`` sends.
    /// - Throws: `ConfidantKitError.messageNotFound` for no such message in the conversation (or
    ///   one deleted for everyone), and what `send` throws.
    public func reply(
        to messageID: UUID, with text: String?, attachments: [AttachmentSource] = [], in contact: Contact,
        confirmKeyChange: Bool = false, progress: @escaping @Sendable (AttachmentProgress) -> Void = { _ in }
    ) async throws -> ChatMessage {
        guard let target = try message(messageID, with: contact.id), target.direction != .notice, !target.isDeleted
        else { throw ConfidantKitError.messageNotFound(messageID) }
        return try await sender.send(
            text, attachments: attachments, to: contact, confirmKeyChange: confirmKeyChange,
            replyTo: ReplyQuote(of: target), progress: progress)
    }
}
