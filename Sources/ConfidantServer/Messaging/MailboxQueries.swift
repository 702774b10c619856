import Fluent
import Foundation
import SQLKit

/// The relay's hot paths — session lookup, mailbox pages, storing and deleting entries — in SQL
/// through SQLKit. Fluent's models find their fields by reflection on every row, which was the
/// largest cost in a profile of the server under load (docs/BENCHMARKS.md); the rest of the
/// server keeps using the models.
enum MailboxQueries {
    /// One mailbox entry as stored.
    struct Row: Sendable {
        let cursor: Int64
        let kind: MailboxRecord.Kind
        let sender: DeviceAddress
        let messageID: UUID?
        let payload: Data
        let receivedAt: Date
    }

    /// An entry to store; the database assigns the cursor.
    struct NewEntry: Sendable {
        let recipient: DeviceAddress
        let kind: MailboxRecord.Kind
        let sender: DeviceAddress
        let messageID: UUID?
        let payload: Data
        let receivedAt: Date
    }

    static func sql(_ db: any Database) throws -> any SQLDatabase {
        guard let sql = db as? any SQLDatabase else {
            throw APIFailure(.internalServerError, "internal", "The database does not speak SQL.")
        }
        return sql
    }

    /// Entries for `address` with a cursor greater than `after`, oldest first.
    static func page(of address: DeviceAddress, after: Int64, limit: Int, on db: any Database) async throws -> [Row] {
        let rows = try await sql(db).select()
            .columns("cursor", "kind", "sender_user_id", "sender_device_id", "message_id", "payload", "received_at")
            .from(MailboxRecord.schema)
            .where("recipient_user_id", .equal, address.userID)
            .where("recipient_device_id", .equal, address.deviceID)
            .where("cursor", .greaterThan, after)
            .orderBy("cursor")
            .limit(limit)
            .all()
        return try rows.map { row in
            Row(cursor: try row.decode(column: "cursor", as: Int64.self),
                kind: MailboxRecord.Kind(rawValue: try row.decode(column: "kind", as: String.self)) ?? .envelope,
                sender: DeviceAddress(userID: try row.decode(column: "sender_user_id", as: UUID.self),
                                      deviceID: try row.decode(column: "sender_device_id", as: UUID.self)),
                messageID: try row.decode(column: "message_id", as: UUID?.self),
                payload: try row.decode(column: "payload", as: Data.self),
                receivedAt: try row.decode(column: "received_at", as: Date.self))
        }
    }

    static func insert(_ entries: [NewEntry], on db: any Database) async throws {
        // SQLite takes at most 32,766 bound values per statement; 8 per row.
        for start in stride(from: 0, to: entries.count, by: 1000) {
            var insert = try sql(db).insert(into: MailboxRecord.schema)
                .columns("recipient_user_id", "recipient_device_id", "kind", "sender_user_id", "sender_device_id", "message_id", "payload", "received_at")
            for entry in entries[start..<min(start + 1000, entries.count)] {
                insert = insert.values(SQLBind(entry.recipient.userID), SQLBind(entry.recipient.deviceID), SQLBind(entry.kind.rawValue),
                                       SQLBind(entry.sender.userID), SQLBind(entry.sender.deviceID), SQLBind(entry.messageID),
                                       SQLBind(entry.payload), SQLBind(entry.receivedAt))
            }
            try await insert.run()
        }
    }

    /// Deletes those of `cursors` that belong to `address`; returns how many.
    static func delete(_ cursors: [Int64], for address: DeviceAddress, on db: any Database) async throws -> Int {
        try await sql(db).delete(from: MailboxRecord.schema)
            .where("recipient_user_id", .equal, address.userID)
            .where("recipient_device_id", .equal, address.deviceID)
            .where("cursor", .in, cursors)
            .returning("cursor")
            .all()
            .count
    }

    /// The live session with this token hash, and when it expires.
    static func session(tokenHash: Data, now: Date, on db: any Database) async throws -> (Caller, expires: Date)? {
        guard let row = try await sql(db).select()
            .columns("id", "user_id", "device_id", "expires_at", "revoked_at")
            .from(SessionRecord.schema)
            .where("token_hash", .equal, tokenHash)
            .first()
        else { return nil }
        let expires = try row.decode(column: "expires_at", as: Date.self)
        guard try row.decode(column: "revoked_at", as: Date?.self) == nil, expires > now else { return nil }
        return (Caller(userID: try row.decode(column: "user_id", as: UUID.self), deviceID: try row.decode(column: "device_id", as: UUID.self),
                       sessionID: try row.decode(column: "id", as: UUID.self)), expires)
    }
}
