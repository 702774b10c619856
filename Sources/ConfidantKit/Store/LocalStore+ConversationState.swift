import ConfidantCrypto
import Foundation
import GRDB

/// The composer's draft and the "mark as unread" of each conversation (`conversation_state`):
/// one row per conversation that has either, gone when it has neither.
extension LocalStore {
    /// Keeps `draft` for `conversation`, sealed; an empty draft (no text, no reply) removes it.
    func saveDraft(_ draft: ChatDraft, in conversation: UUID) throws {
        try write(.deferred) { db in
            if draft.isEmpty {
                try db.cachedStatement(sql: "UPDATE conversation_state SET draft = NULL WHERE conversation_id = ?")
                    .execute(arguments: [conversation.canonicalString])
            } else {
                let sealed = try seal(try JSONEncoder().encode(draft), .draft(conversation: conversation))
                try db.cachedStatement(
                    sql: """
                        INSERT INTO conversation_state (conversation_id, draft) VALUES (?, ?)
                        ON CONFLICT (conversation_id) DO UPDATE SET draft = excluded.draft
                        """
                ).execute(arguments: [conversation.canonicalString, sealed])
            }
            try forgetEmptyState(of: conversation, db)
        }
    }

    /// The draft kept for `conversation`, opened; nil when there is none.
    func draft(in conversation: UUID, _ db: Database) throws -> ChatDraft? {
        guard
            let sealed = try Data.fetchOne(
                db.cachedStatement(sql: "SELECT draft FROM conversation_state WHERE conversation_id = ?"),
                arguments: [conversation.canonicalString])
        else { return nil }
        return try openDraft(sealed, of: conversation)
    }

    func openDraft(_ sealed: Data, of conversation: UUID) throws -> ChatDraft {
        let json = try open(sealed, .draft(conversation: conversation))
        do {
            return try JSONDecoder().decode(ChatDraft.self, from: json)
        } catch {
            throw ConfidantKitError.storeDamaged("a conversation's draft does not read (\(error))")
        }
    }

    /// Marks `conversation` unread until it is read again (``markRead(peer:queueingReceipts:now:)``
    /// clears it); its messages keep their read marks, and nobody is told.
    func markUnread(_ conversation: UUID) throws {
        try write(.deferred) { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO conversation_state (conversation_id, marked_unread) VALUES (?, 1)
                    ON CONFLICT (conversation_id) DO UPDATE SET marked_unread = 1
                    """
            ).execute(arguments: [conversation.canonicalString])
        }
    }

    /// Takes the "mark as unread" off `conversation`, within the caller's transaction.
    func clearUnreadMark(of conversation: UUID, _ db: Database) throws {
        try db.cachedStatement(
            sql: "UPDATE conversation_state SET marked_unread = 0 WHERE conversation_id = ? AND marked_unread = 1"
        ).execute(arguments: [conversation.canonicalString])
        // Most reads find no mark: one statement on the path of every message read in an open chat.
        if db.changesCount > 0 { try forgetEmptyState(of: conversation, db) }
    }

    /// Drops a conversation's row once it keeps nothing.
    private func forgetEmptyState(of conversation: UUID, _ db: Database) throws {
        try db.cachedStatement(
            sql: "DELETE FROM conversation_state WHERE conversation_id = ? AND draft IS NULL AND marked_unread = 0"
        ).execute(arguments: [conversation.canonicalString])
    }
}
