import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// "Owner has talked with peer; last activity at …", kept for both directions of each pair.
enum ConversationTable {
    typealias Column = ConversationRecord.Column

    /// "Last activity" for both directions of each pair, inserted or updated: one statement per
    /// 4,000 rows, the first to ride in the mailbox's insert
    /// (`MailboxTable.insertHandingOver(_:alongside:folding:on:)`).
    static func touches(_ conversations: [UUID: Set<UUID>], at now: Date, on db: any Database) throws -> [SQLInsert] {
        var pairs = Set<[UUID]>()
        for (sender, peers) in conversations {
            for peer in peers { pairs.formUnion([[sender, peer], [peer, sender]]) }
        }
        // A statement may touch a row once (PostgreSQL), hence the set; SQLite takes at most
        // 32,766 bound values, 4 per row.
        let all = Array(pairs)
        return try stride(from: 0, to: all.count, by: 4000).map { start in
            var insert = try RelayDatabase.sql(db).insert(into: SQLName(ConversationRecord.schema))
                .columns(SQLName("id"), SQLName(Column.ownerID), SQLName(Column.peerID), SQLName(Column.lastActivity))
            for pair in all[start..<min(start + 4000, all.count)] {
                insert = insert.values(
                    UUIDValue(UUID.timeOrdered(at: now)), UUIDValue(pair[0]), UUIDValue(pair[1]), SQLBind(now))
            }
            return insert.onConflict(with: [Column.ownerID, Column.peerID]) {
                $0.set(excludedValueOf: Column.lastActivity)
            }.insert
        }
    }
}
