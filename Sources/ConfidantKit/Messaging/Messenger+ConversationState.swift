import Foundation

/// What a conversation keeps on this device besides its lines: the composer's draft, and the
/// user's "mark as unread". Neither leaves the device.
extension Messenger {
    /// Keeps `draft` as what the composer of `conversation` (a peer, or a group) holds, sealed at
    /// rest; an empty draft removes it. At most ``ChatPayload/maximumTextBytes`` of text, as a
    /// message: a longer one could not be sent.
    public func saveDraft(_ draft: ChatDraft, in conversation: UUID) throws {
        guard draft.text.utf8.count <= ChatPayload.maximumTextBytes else {
            throw ConfidantKitError.messageTooLarge(bytes: draft.text.utf8.count, limit: ChatPayload.maximumTextBytes)
        }
        try store.saveDraft(draft, in: conversation)
    }

    /// The draft kept for `conversation`; nil when there is none.
    public func draft(in conversation: UUID) throws -> ChatDraft? {
        try store.read { db in try store.draft(in: conversation, db) }
    }

    /// Marks `conversation` unread: it counts as unread until it is opened (marked read) again.
    /// Local only: no receipt changes, and the peer is not told.
    public func markUnread(_ conversation: UUID) throws {
        try store.markUnread(conversation)
    }
}
