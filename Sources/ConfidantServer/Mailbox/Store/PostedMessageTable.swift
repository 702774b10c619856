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

    /// Result columns of the earlier receipts' part of `RecipientDirectory`'s statement.
    static let receiptColumns = ["posted_sender", "posted_message", "posted_stored", "posted_received_at"]

    /// Makes `branch` select what was stored for those of the (sender, message) pairs that were
    /// sent before, as `receiptColumns`, after `leading` empty columns.
    static func receipts(
        for pairs: [(sender: UUID, message: UUID)], leading: [String], in branch: any SQLSubqueryClauseBuilder
    ) -> any SQLSubqueryClauseBuilder {
        var branch = branch
        for name in leading { branch = branch.column(SQLLiteral.null, as: SQLName(name)) }
        // Pairs, so that the unique (sender_user_id, message_id) index answers one probe per
        // message (two IN lists would probe every sender with every message id).
        return
            branch
            .column(SQLName(Column.senderUserID), as: SQLName(receiptColumns[0]))
            .column(SQLName(Column.messageID), as: SQLName(receiptColumns[1]))
            .column(SQLName(Column.stored), as: SQLName(receiptColumns[2]))
            .column(SQLName(Column.receivedAt), as: SQLName(receiptColumns[3]))
            .from(SQLName(PostedMessageRecord.schema))
            .where(
                SQLGroupExpression([SQLName(Column.senderUserID), SQLName(Column.messageID)]), .in,
                MailboxTable.values(pairs.map { [UUIDValue($0.sender), UUIDValue($0.message)] })
            )
    }

    /// The earlier receipt a row of that statement holds, if it holds one.
    static func receipt(in row: any SQLRow) throws -> (key: Key, row: Row)? {
        guard let sender = try row.decode(column: receiptColumns[0], as: UUID?.self) else { return nil }
        return (
            Key(sender: sender, message: try row.decode(column: receiptColumns[1], as: UUID.self)),
            Row(
                stored: try row.decode(column: receiptColumns[2], as: Int.self),
                receivedAt: try row.decode(column: receiptColumns[3], as: Date.self))
        )
    }

    /// The statements that store `accepted`, one per 5,000 rows (SQLite takes at most 32,766 bound
    /// values per statement; 4 per row), the first to ride in the mailbox's insert
    /// (`MailboxTable.insertHandingOver(_:alongside:folding:on:)`).
    static func insertions(_ accepted: [(key: Key, row: Row)], on db: any Database) throws -> [SQLInsert] {
        try stride(from: 0, to: accepted.count, by: 5000).map { start in
            var insert = try RelayDatabase.sql(db).insert(into: SQLName(PostedMessageRecord.schema))
                .columns(
                    SQLName(Column.senderUserID), SQLName(Column.messageID), SQLName(Column.stored),
                    SQLName(Column.receivedAt))
            for (key, row) in accepted[start..<min(start + 5000, accepted.count)] {
                insert = insert.values(
                    UUIDValue(key.sender), UUIDValue(key.message), SQLBind(row.stored), SQLBind(row.receivedAt))
            }
            return insert.insert
        }
    }

    /// Forgets every message `sender` sent (the account is deleted).
    static func deleteAll(sentBy sender: UUID, on db: any Database) async throws {
        try await RelayDatabase.sql(db).delete(from: PostedMessageRecord.schema)
            .where(Column.senderUserID, .equal, UUIDValue(sender)).run()
    }

    /// Forgets messages stored before `cutoff`: a retry after that is a new message.
    static func deleteReceived(before cutoff: Date, on db: any Database) async throws -> Int {
        try await RelayDatabase.sql(db).delete(from: PostedMessageRecord.schema)
            .where(Column.receivedAt, .lessThan, SQLBind(cutoff)).returning(Column.receivedAt).all().count
    }
}
