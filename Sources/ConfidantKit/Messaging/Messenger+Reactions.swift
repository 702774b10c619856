import ConfidantCrypto
import Foundation

extension Messenger {
    /// Sets your reaction to a message of a conversation (yours or theirs, one-to-one or in a
    /// group) to `emoji`, or takes it back with nil: here, and by a sealed control message on the
    /// other side's devices (in a group, every member's, with the group's sender key) and your
    /// others. One reaction per person per message: a new one replaces yours.
    /// - Parameters:
    ///   - messageID: the message reacted to.
    ///   - emoji: one emoji, or nil to take the reaction back.
    ///   - peer: the conversation (a peer or a group), when another may have a message with the
    ///     same id (senders choose their ids).
    /// - Throws: `ConfidantKitError.notAReaction` for anything but one emoji, `.messageNotFound`
    ///   for no such message here (or one deleted for everyone).
    public func react(to messageID: UUID, with emoji: String?, in peer: UUID? = nil) async throws {
        if let emoji, !ReactionEmoji.accepts(emoji) { throw ConfidantKitError.notAReaction(emoji) }
        let found =
            try [ChatMessage.Direction.incoming, .outgoing].lazy.compactMap { direction in
                try self.store.message(id: messageID, direction: direction)
            }.first { peer == nil || $0.peer == peer }
        guard let message = found, !message.isDeleted else { throw ConfidantKitError.messageNotFound(messageID) }
        let now = now()
        try store.write { db in
            guard
                try store.applyReaction(messageID, emoji: emoji, by: me, conversation: message.peer, at: now, db)
            else { throw ConfidantKitError.messageNotFound(messageID) }
            try store.queueControl(
                ChatPayload(conversation: message.peer, content: .reaction(messageID: messageID, emoji: emoji)),
                to: message.peer, now: now, db)
        }
        eventHub.emit(.changed)
        try await sender.deliverOutbox()
    }
}
