import ConfidantCrypto
import Foundation
import GRDB

/// What happens to messages after they are stored: receipts move sent messages on, their author
/// edits or deletes them, and disappearing ones expire.
extension LocalStore {
    /// Moves this profile's messages to `peer` named by a receipt forward — sent → delivered →
    /// read, never back. Returns how many changed.
    @discardableResult
    func applyReceipt(_ receipt: Receipt, from peer: UUID, _ db: Database) throws -> Int {
        // The states it moves on from; `delivered` is listed twice for a delivery receipt, so one
        // cached statement serves both kinds (a receipt comes with nearly every message sent).
        let (new, states): (MessageState, [MessageState]) =
            switch receipt.type {
            case .delivered: (.delivered, [.pending, .sent, .sent])
            case .read: (.read, [.pending, .sent, .delivered])
            }
        let update = try db.cachedStatement(
            sql: """
                UPDATE message SET state = ?, failure = NULL
                WHERE message_id = ? AND peer_id = ? AND direction = ? AND state IN (?, ?, ?)
                """)
        // A message a receipt names got through, whatever the outbox thought.
        let dequeue = try db.cachedStatement(sql: "DELETE FROM outbox WHERE message_id = ? AND peer_id = ?")
        var changed = 0
        for id in receipt.messageIDs {
            try update.execute(arguments: [
                new, id.canonicalString, peer.canonicalString, ChatMessage.Direction.outgoing, states[0], states[1],
                states[2],
            ])
            changed += db.changesCount
            try dequeue.execute(arguments: [id.canonicalString, peer.canonicalString])
        }
        return changed
    }

    /// Where an edit or deletion by `author` applies: their own messages only — incoming ones
    /// from that peer (in a group, the group's from that author), or this account's own (from any
    /// of its devices) in `conversation`.
    private func authored(_ target: UUID, author: UUID, me: UUID, conversation: UUID, inGroup: Bool)
        -> QueryInterfaceRequest<MessageRecord>
    {
        let direction: ChatMessage.Direction = author == me ? .outgoing : .incoming
        let peer = author == me || inGroup ? conversation : author
        var filter =
            MessageRecord.Columns.messageID == target.canonicalString
            && MessageRecord.Columns.peerID == peer.canonicalString && MessageRecord.Columns.direction == direction
            && MessageRecord.Columns.deletedAt == nil
        if inGroup, author != me { filter = filter && MessageRecord.Columns.authorID == author.canonicalString }
        return MessageRecord.filter(filter)
    }

    /// Replaces the text of `author`'s message `target`; false when there is no such message of
    /// theirs (a forged edit of someone else's message finds nothing).
    func applyEdit(
        _ target: UUID, text: String, author: UUID, me: UUID, conversation: UUID, inGroup: Bool, at date: Date,
        _ db: Database
    ) throws -> Bool {
        let request = authored(target, author: author, me: me, conversation: conversation, inGroup: inGroup)
        guard let record = try request.fetchOne(db) else { return false }
        // An older edit (one replayed, or overtaken on the way) does not undo a newer one.
        if let edited = record.editedAt, edited >= date { return false }
        let body = try seal(
            Data(text.utf8), .message(id: record.messageID, peer: record.peerID, direction: record.direction))
        try request.updateAll(
            db, MessageRecord.Columns.body.set(to: body), MessageRecord.Columns.editedAt.set(to: date))
        if let sequence = record.seq {
            let names = try AttachmentRecord.filter(
                AttachmentRecord.Columns.messageID == record.messageID.canonicalString
                    && AttachmentRecord.Columns.peerID == record.peerID.canonicalString
                    && AttachmentRecord.Columns.direction == record.direction
            ).fetchAll(db).map { try openAttachment($0).name }
            try indexForSearch(sequence, texts: [text] + names, replacing: true, db)
        }
        return true
    }

    /// Deletes the text and files of `author`'s message `target`, keeping a "deleted" line.
    /// Returns the files to remove, or nil when there is no such message.
    func applyDeletion(
        _ target: UUID, author: UUID, me: UUID, conversation: UUID, inGroup: Bool, at date: Date, _ db: Database
    ) throws -> [AttachmentFile]? {
        let request = authored(target, author: author, me: me, conversation: conversation, inGroup: inGroup)
        guard let record = try request.fetchOne(db) else { return nil }
        let attachments = AttachmentRecord.filter(
            AttachmentRecord.Columns.messageID == record.messageID.canonicalString
                && AttachmentRecord.Columns.peerID == record.peerID.canonicalString
                && AttachmentRecord.Columns.direction == record.direction)
        let files = try attachments.fetchAll(db).map(AttachmentFile.init)
        try attachments.deleteAll(db)
        try request.updateAll(
            db, MessageRecord.Columns.body.set(to: nil), MessageRecord.Columns.deletedAt.set(to: date))
        try touchReplies(to: record.messageID, in: record.peerID, db)
        return files
    }

    // MARK: Disappearing messages

    /// The conversation's disappearing-message timer in seconds, nil when messages stay.
    func timer(for peer: UUID, _ db: Database) throws -> Int? {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT expires_after FROM conversation_setting WHERE peer_id = ?"),
            arguments: [peer.canonicalString])
    }

    func timer(for peer: UUID) throws -> Int? { try read { db in try timer(for: peer, db) } }

    /// Sets the conversation's timer, set at `date` (now, for the user's own change).
    func setTimer(_ seconds: Int?, for peer: UUID, at date: Date = Date(), _ db: Database) throws {
        try ConversationSettingRecord(peerID: peer, expiresAfter: seconds, setAt: date).save(db)
    }

    /// Sets the conversation's timer from a timer control sent at `date`, unless the one in force
    /// was set later (the latest setting wins on every device, whichever arrives last); returns
    /// whether it changed anything.
    func applyTimer(_ seconds: Int?, for peer: UUID, at date: Date, _ db: Database) throws -> Bool {
        let current = try ConversationSettingRecord.fetchOne(db, key: ["peer_id": peer.canonicalString])
        if let setAt = current?.setAt, setAt >= date { return false }
        try setTimer(seconds, for: peer, at: date, db)
        return true
    }

    /// Deletes messages whose time is up (their rows, overwritten on disk: `secure_delete` is on)
    /// and returns how many went; their attachment files are removed too. The ids of received
    /// ones are kept (`seen_envelope`), so that a copy handed over again does not bring one back.
    @discardableResult
    func deleteExpired(now: Date, me: UUID) throws -> Int {
        let (count, files) = try write { db -> (Int, [AttachmentFile]) in
            let expired = MessageRecord.filter(MessageRecord.Columns.expiresAt <= now.timeIntervalSince1970)
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO seen_envelope (sender_id, message_id, seen_at)
                    SELECT CASE direction WHEN ? THEN peer_id ELSE ? END, message_id, ?
                    FROM message WHERE expires_at <= ? AND direction != ?
                    """,
                arguments: [
                    ChatMessage.Direction.incoming, me.canonicalString, now.timeIntervalSince1970,
                    now.timeIntervalSince1970, ChatMessage.Direction.notice,
                ])
            try forgetSeen(before: now, db)
            let files = try AttachmentRecord.fetchAll(
                db,
                sql: """
                    SELECT a.* FROM attachment a JOIN message m
                      ON m.message_id = a.message_id AND m.peer_id = a.peer_id AND m.direction = a.direction
                    WHERE m.expires_at <= ?
                    """, arguments: [now.timeIntervalSince1970]
            ).map(AttachmentFile.init)
            let count = try expired.deleteAll(db)
            return (count, files)
        }
        removeAttachmentFiles(files)
        return count
    }

    /// Deletes the message `id` of the conversation with `peer` on this device (``Messenger/deleteForMe(_:with:)``):
    /// its rows, any outbox entry and its attachments; a received one's id is kept in
    /// `seen_envelope`, as for an expired message. Returns the files to remove, nil when there is
    /// no such message.
    func deleteLocally(_ id: UUID, peer: UUID, me: UUID, now: Date) throws -> [AttachmentFile]? {
        try write { db -> [AttachmentFile]? in
            let rows = MessageRecord.filter(
                MessageRecord.Columns.messageID == id.canonicalString
                    && MessageRecord.Columns.peerID == peer.canonicalString)
            guard try rows.fetchCount(db) > 0 else { return nil }
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO seen_envelope (sender_id, message_id, seen_at)
                    SELECT CASE direction WHEN ? THEN peer_id ELSE ? END, message_id, ?
                    FROM message WHERE message_id = ? AND peer_id = ? AND direction != ?
                    """,
                arguments: [
                    ChatMessage.Direction.incoming, me.canonicalString, now.timeIntervalSince1970, id.canonicalString,
                    peer.canonicalString, ChatMessage.Direction.notice,
                ])
            try db.execute(
                sql: "DELETE FROM outbox WHERE message_id = ? AND peer_id = ?",
                arguments: [id.canonicalString, peer.canonicalString])
            let attachments = AttachmentRecord.filter(
                AttachmentRecord.Columns.messageID == id.canonicalString
                    && AttachmentRecord.Columns.peerID == peer.canonicalString)
            let files = try attachments.fetchAll(db).map(AttachmentFile.init)
            try attachments.deleteAll(db)
            try rows.deleteAll(db)
            try forgetGroupReceipts(of: id, group: peer, db)
            return files
        }
    }

    /// When the next message disappears, if any will.
    func nextExpiry() throws -> Date? {
        try read { db in
            try Double.fetchOne(db, sql: "SELECT MIN(expires_at) FROM message WHERE expires_at IS NOT NULL")
                .map(Date.init(timeIntervalSince1970:))
        }
    }
}
