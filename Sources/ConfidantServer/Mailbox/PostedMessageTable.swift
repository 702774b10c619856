import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// The message ids each sender has had stored, so that a retried send is answered from here and
/// stores nothing twice.
enum PostedMessageTable {
    typealias Column = PostedMessageRecord.Column

    struct Key: Hashable, Sendable {
        let sender: UUID
        let message: UUID
    }

    struct Row: Sendable {
        let stored: Int
        let receivedAt: Date
    }

    /// What was stored for those of the (sender, message) pairs that were sent before.
    static func receipts(for pairs: [(sender: UUID, message: UUID)], on db: any Database) async throws -> [Key: Row] {
        var found: [Key: Row] = [:]
        // Pairs, so that the unique (sender_user_id, message_id) index answers one probe per
        // message (two IN lists would probe every sender with every message id).
        let rows = try await RelayDatabase.sql(db).select()
            .columns(Column.senderUserID, Column.messageID, Column.stored, Column.receivedAt)
            .from(PostedMessageRecord.schema)
            .where(
                SQLGroupExpression([SQLColumn(Column.senderUserID), SQLColumn(Column.messageID)]), .in,
                MailboxTable.values(pairs.map { [UUIDValue($0.sender), UUIDValue($0.message)] })
            )
            .all()
        for row in rows {
            let key = Key(
                sender: try row.decode(column: Column.senderUserID, as: UUID.self),
                message: try row.decode(column: Column.messageID, as: UUID.self))
            found[key] = Row(
                stored: try row.decode(column: Column.stored, as: Int.self),
                receivedAt: try row.decode(column: Column.receivedAt, as: Date.self))
        }
        return found
    }

    static func insert(_ accepted: [(key: Key, row: Row)], on db: any Database) async throws {
        // SQLite takes at most 32,766 bound values per statement; 5 per row.
        for start in stride(from: 0, to: accepted.count, by: 5000) {
            var insert = try RelayDatabase.sql(db).insert(into: PostedMessageRecord.schema)
                .columns("id", Column.senderUserID, Column.messageID, Column.stored, Column.receivedAt)
            for (key, row) in accepted[start..<min(start + 5000, accepted.count)] {
                insert = insert.values(
                    UUIDValue(.timeOrdered(at: row.receivedAt)), UUIDValue(key.sender), UUIDValue(key.message),
                    SQLBind(row.stored),
                    SQLBind(row.receivedAt))
            }
            try await insert.run()
        }
    }
}
