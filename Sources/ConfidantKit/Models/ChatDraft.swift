import Foundation

/// What the composer of a conversation holds and has not sent: its text and the message it
/// answers. Kept per conversation on this device only, sealed at rest (``Messenger/saveDraft(_:in:)``).
public struct ChatDraft: Sendable, Hashable, Codable {
    /// The text typed so far.
    public var text: String
    /// The message the draft answers, if any.
    public var replyTo: UUID?

    /// A draft of `text`, answering `replyTo` if given.
    public init(text: String, replyTo: UUID? = nil) {
        self.text = text
        self.replyTo = replyTo
    }

    /// Nothing typed and nothing answered: there is no draft to keep.
    public var isEmpty: Bool { text.isEmpty && replyTo == nil }
}
