import Foundation
import GRDB

/// Receipts for this account's group messages, one row per message and member (docs/PROTOCOL.md
/// §10.4): a member's delivery receipt makes the row, a read receipt marks it read; nothing moves
/// back.
extension LocalStore {
    /// Records `receipt` from `member` for this account's own messages in `group` (ids of
    /// anything else find nothing). Returns how many rows changed.
    @discardableResult
    func applyGroupReceipt(_ receipt: Receipt, from member: UUID, group: UUID, _ db: Database) throws -> Int {
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO group_receipt (message_id, group_id, member_id, is_read)
                SELECT message_id, peer_id, ?, ? FROM message WHERE message_id = ? AND peer_id = ? AND direction = ?
                ON CONFLICT (group_id, message_id, member_id) DO UPDATE SET is_read = excluded.is_read
                WHERE excluded.is_read > group_receipt.is_read
                """)
        let isRead = receipt.type == .read ? 1 : 0
        var changed = 0
        for id in receipt.messageIDs {
            try upsert.execute(arguments: [
                member.canonicalString, isRead, id.canonicalString, group.canonicalString,
                ChatMessage.Direction.outgoing,
            ])
            changed += db.changesCount
        }
        return changed
    }

    /// For each of `ids` in `group` that has receipts: how many of `members` have it, and have
    /// read it (receipts of members who have left since do not count).
    func groupReceiptCounts(_ ids: [UUID], group: UUID, members: Set<UUID>) throws -> [UUID: (
        delivered: Int, read: Int
    )] {
        guard !ids.isEmpty else { return [:] }
        let wanted = Set(members.map(\.canonicalString))
        return try read { db in
            var counts: [UUID: (delivered: Int, read: Int)] = [:]
            // The ids come from this store: a history page's worth, in chunks SQLite binds.
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = ids[start..<min(ids.count, start + 500)]
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                let rows = try Row.fetchCursor(
                    db,
                    sql: """
                        SELECT message_id, member_id, is_read FROM group_receipt
                        WHERE group_id = ? AND message_id IN (\(marks))
                        """,
                    arguments: StatementArguments([group.canonicalString] + chunk.map(\.canonicalString)))
                while let row = try rows.next() {
                    guard wanted.contains(row["member_id"]), let id = UUID(uuidString: row["message_id"]) else {
                        continue
                    }
                    let isRead: Bool = row["is_read"]
                    let count = counts[id] ?? (0, 0)
                    counts[id] = (count.delivered + 1, count.read + (isRead ? 1 : 0))
                }
            }
            return counts
        }
    }

    /// Forgets the receipts of one of this account's group messages (deleted from this device).
    func forgetGroupReceipts(of id: UUID, group: UUID, _ db: Database) throws {
        try db.execute(
            sql: "DELETE FROM group_receipt WHERE group_id = ? AND message_id = ?",
            arguments: [group.canonicalString, id.canonicalString])
    }
}
