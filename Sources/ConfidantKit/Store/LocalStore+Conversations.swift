import ConfidantCrypto
import Foundation
import GRDB

/// The main screen's rows and the account's own notices.
extension LocalStore {
    /// Conversations, most recent first, with unread counts, the last line, a key-change warning
    /// (not a timer notice) that came after your last message, and the draft and "mark as
    /// unread" each keeps: one query, plus one for the contacts.
    func conversations(_ db: Database) throws -> [ConversationSummary] {
        // Decoded while the cursor is on each row, not from copies (see `outbox()`).
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT m.*, s.unread, n.message_id AS notice_id, n.body AS notice_body,
                       c.draft AS draft, COALESCE(c.marked_unread, 0) AS marked_unread FROM message m
                JOIN (SELECT peer_id, MAX(seq) AS last, SUM(direction = ? AND is_read = 0) AS unread,
                             MAX(CASE WHEN direction = ? AND COALESCE(notice_kind, 'key-change') = 'key-change'
                                 THEN seq END) AS last_notice,
                             MAX(CASE WHEN direction = ? THEN seq END) AS last_outgoing
                      FROM message GROUP BY peer_id) s ON m.seq = s.last
                LEFT JOIN message n ON n.seq = s.last_notice AND s.last_notice > COALESCE(s.last_outgoing, 0)
                LEFT JOIN conversation_state c ON c.conversation_id = m.peer_id
                ORDER BY m.sent_at DESC, m.seq DESC
                """,
            arguments: [ChatMessage.Direction.incoming, ChatMessage.Direction.notice, ChatMessage.Direction.outgoing])
        var records: [MessageRecord] = []
        var extras: [(unread: Int, noticeID: UUID?, noticeBody: Data?, draft: Data?, marked: Bool)] = []
        while let row = try rows.next() {
            records.append(try MessageRecord(row: row))
            extras.append((row["unread"], row["notice_id"], row["notice_body"], row["draft"], row["marked_unread"]))
        }
        let lasts = try chatMessages(records, db)
        let contacts = try contacts(Set(lasts.map(\.peer)), db)
        let verified = try verifiedPeers(db)
        return try zip(extras, lasts).compactMap { extra, last in
            guard let peer = contacts[last.peer] else { return nil }
            var warning: String?
            if let noticeID = extra.noticeID, let body = extra.noticeBody {
                warning = String(
                    decoding: try open(body, .message(id: noticeID, peer: last.peer, direction: .notice)), as: UTF8.self
                )
            }
            var summary = ConversationSummary(
                peer: peer, lastActivity: last.sentAt, unread: extra.unread, preview: last.displayText,
                keyChangeWarning: warning, verified: verified.contains(last.peer))
            summary.markedUnread = extra.marked
            summary.draft = try extra.draft.map { try openDraft($0, of: last.peer) }
            return summary
        }
    }

    /// Peers whose current keys are the ones the user verified: the few with a mark, each checked
    /// against the keys this device knows.
    private func verifiedPeers(_ db: Database) throws -> Set<UUID> {
        var peers: Set<UUID> = []
        let marks = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT user_id, verified_digest FROM contact WHERE verified_digest IS NOT NULL"))
        for mark in marks {
            let user: String = mark["user_id"]
            let identities = try Data.fetchAll(
                db.cachedStatement(sql: "SELECT identity FROM contact_key WHERE user_id = ? AND retired_at IS NULL"),
                arguments: [user])
            if KeyDirectory.verificationDigest(identities) == mark["verified_digest"], let id = UUID(uuidString: user) {
                peers.insert(id)
            }
        }
        return peers
    }

    func conversations() throws -> [ConversationSummary] {
        try read { db in try conversations(db) }
    }

    /// Notices about the account itself (filed under its own user id): a device added to it,
    /// one that got a new key or was removed; newest first, only the unseen ones unless `all`.
    func accountNotices(of me: UUID, all: Bool = false, _ db: Database) throws -> [ChatMessage] {
        var request = MessageRecord.filter(
            MessageRecord.Columns.peerID == me.canonicalString
                && MessageRecord.Columns.direction == ChatMessage.Direction.notice)
        if !all { request = request.filter(MessageRecord.Columns.isRead == false) }
        return try chatMessages(request.order(MessageRecord.Columns.seq.desc).limit(50).fetchAll(db), db)
    }
}
