import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// Group envelopes stored once for all of their recipients (a shared send, docs/PROTOCOL.md §7.2
/// version 3), keyed by sender and message id: each recipient's mailbox entry (kind
/// `shared_envelope`, empty payload) refers to its body, which goes with the last acknowledgement
/// of those entries; anything left over (an entry deleted with its account or by the retention)
/// goes with the maintenance sweep (`deleteOrphans`).
enum SharedBodyTable {
    static let schema = "shared_bodies"

    enum Column {
        static let senderUserID = "sender_user_id"
        static let messageID = "message_id"
        static let payload = "payload"
    }

    struct Body: Sendable {
        let sender: UUID
        let messageID: UUID
        let payload: Data
    }

    typealias Key = PostedMessageTable.Key

    /// Whether no shared entry refers to the body any more, as SQL on a `shared_bodies` row.
    private static let unreferenced = """
        NOT EXISTS (SELECT 1 FROM "\(MailboxRecord.schema)" m WHERE m."\(MailboxRecord.Column.kind)" = \
        '\(MailboxRecord.Kind.sharedEnvelope.rawValue)' AND m."\(MailboxRecord.Column.senderUserID)" = \
        "\(schema)"."\(Column.senderUserID)" AND m."\(MailboxRecord.Column.messageID)" = \
        "\(schema)"."\(Column.messageID)")
        """

    private static let insertBody = """
        INSERT INTO "\(schema)" ("\(Column.senderUserID)", "\(Column.messageID)", "\(Column.payload)") \
        VALUES (?1, ?2, ?3)
        """

    private static let deleteBody = """
        DELETE FROM "\(schema)" WHERE "\(Column.senderUserID)" = ?1 AND "\(Column.messageID)" = ?2 AND \(unreferenced)
        """

    // MARK: SQLite, on the relay's write connection

    static func insert(_ bodies: [Body], on connection: SQLiteWriteConnection) throws {
        guard !bodies.isEmpty else { return }
        let insert = try connection.statement(insertBody)
        for body in bodies {
            insert.reset()
            try insert.bind(1, body.sender)
            try insert.bind(2, body.messageID)
            try insert.bind(3, body.payload)
            try insert.run()
        }
    }

    /// Deletes those of the bodies no entry refers to any more.
    static func deleteUnreferenced(_ keys: Set<Key>, on connection: SQLiteWriteConnection) throws {
        guard !keys.isEmpty else { return }
        let delete = try connection.statement(deleteBody)
        for key in keys {
            delete.reset()
            try delete.bind(1, key.sender)
            try delete.bind(2, key.message)
            try delete.run()
        }
    }

    // MARK: Any database

    static func insert(_ bodies: [Body], on db: any Database) async throws {
        // 3 bound values per row: far under either database's bound.
        for start in stride(from: 0, to: bodies.count, by: 1000) {
            var insert = try RelayDatabase.sql(db).insert(into: SQLName(schema))
                .columns(SQLName(Column.senderUserID), SQLName(Column.messageID), SQLName(Column.payload))
            for body in bodies[start..<min(start + 1000, bodies.count)] {
                insert = insert.values(UUIDValue(body.sender), UUIDValue(body.messageID), SQLBind(body.payload))
            }
            try await insert.run()
        }
    }

    /// Deletes those of the bodies no entry refers to any more.
    static func deleteUnreferenced(_ keys: Set<Key>, on db: any Database) async throws {
        for key in keys {
            try await RelayDatabase.sql(db).raw(
                SQLQueryString(
                    """
                    DELETE FROM \(ident: schema) WHERE \(ident: Column.senderUserID) = \(UUIDValue(key.sender)) \
                    AND \(ident: Column.messageID) = \(UUIDValue(key.message)) AND \(unsafeRaw: unreferenced)
                    """)
            ).run()
        }
    }

    /// Deletes every body no entry refers to; answers how many.
    @discardableResult
    static func deleteOrphans(on db: any Database) async throws -> Int {
        try await RelayDatabase.sql(db).raw(
            SQLQueryString(
                "DELETE FROM \(ident: schema) WHERE \(unsafeRaw: unreferenced) RETURNING \(ident: Column.messageID)")
        ).all().count
    }

    /// The bodies under `keys` that are stored, read in one statement.
    private static func bodies(for keys: Set<Key>, on db: any Database) async throws -> [Key: Data] {
        guard !keys.isEmpty else { return [:] }
        let rows = try await RelayDatabase.sql(db).select()
            .columns(SQLName(Column.senderUserID), SQLName(Column.messageID), SQLName(Column.payload))
            .from(SQLName(schema))
            .where(
                SQLGroupExpression([SQLName(Column.senderUserID), SQLName(Column.messageID)]), .in,
                MailboxTable.values(keys.map { [UUIDValue($0.sender), UUIDValue($0.message)] })
            )
            .all()
        var bodies: [Key: Data] = [:]
        for row in rows {
            let key = Key(
                sender: try row.decode(column: Column.senderUserID, as: UUID.self),
                message: try row.decode(column: Column.messageID, as: UUID.self))
            bodies[key] = try row.decode(column: Column.payload, as: Data.self)
        }
        return bodies
    }

    /// The entries with the body of each shared one in place of its empty payload.
    static func filling(_ entries: [MailboxEntry], on db: any Database) async throws
        -> [MailboxEntry]
    {
        let keys = Set(
            entries.compactMap { entry in
                entry.kind == .sharedEnvelope
                    ? entry.messageID.map { Key(sender: entry.sender.userID, message: $0) } : nil
            })
        guard !keys.isEmpty else { return entries }
        let stored = try await bodies(for: keys, on: db)
        return entries.map { entry in
            guard entry.kind == .sharedEnvelope, let id = entry.messageID,
                let body = stored[Key(sender: entry.sender.userID, message: id)]
            else { return entry }
            return MailboxEntry(
                cursor: entry.cursor, kind: entry.kind, sender: entry.sender, messageID: id, payload: body,
                receivedAt: entry.receivedAt)
        }
    }
}
