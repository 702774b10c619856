import ConfidantCrypto
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

    /// A stored entry and whose mailbox it is in.
    struct AddressedRow: Sendable {
        let recipient: DeviceAddress
        let row: Row
    }

    /// An entry to store; the database assigns the cursor.
    struct NewEntry: Sendable {
        let recipient: DeviceAddress
        let kind: MailboxRecord.Kind
        let sender: DeviceAddress
        let messageID: UUID?
        let payload: Data
        /// Whole milliseconds (the API's precision), so that an entry handed to a stream as stored
        /// reads the same as when it is read back.
        let receivedAt: Date

        init(recipient: DeviceAddress, kind: MailboxRecord.Kind, sender: DeviceAddress, messageID: UUID?, payload: Data, receivedAt: Date) {
            self.recipient = recipient
            self.kind = kind
            self.sender = sender
            self.messageID = messageID
            self.payload = payload
            self.receivedAt = receivedAt.wholeMilliseconds
        }
    }

    static func sql(_ db: any Database) throws -> any SQLDatabase {
        guard let sql = db as? any SQLDatabase else {
            throw APIFailure(.`internal`, "The database does not speak SQL.")
        }
        return sql
    }

    private static let rowColumns = ["cursor", "kind", "sender_user_id", "sender_device_id", "message_id", "payload", "received_at"]

    /// Entries for `address` with a cursor greater than `after`, oldest first.
    static func page(of address: DeviceAddress, after: Int64, limit: Int, on db: any Database) async throws -> [Row] {
        try await sql(db).select()
            .columns(rowColumns)
            .from(MailboxRecord.schema)
            .where("recipient_user_id", .equal, address.userID)
            .where("recipient_device_id", .equal, address.deviceID)
            .where("cursor", .greaterThan, after)
            .orderBy("cursor")
            .limit(limit)
            .all()
            .map(row)
    }

    private static func row(_ row: any SQLRow) throws -> Row {
        Row(cursor: try row.decode(column: "cursor", as: Int64.self),
            kind: MailboxRecord.Kind(rawValue: try row.decode(column: "kind", as: String.self)) ?? .envelope,
            sender: DeviceAddress(userID: try row.decode(column: "sender_user_id", as: UUID.self),
                                  deviceID: try row.decode(column: "sender_device_id", as: UUID.self)),
            messageID: try row.decode(column: "message_id", as: UUID?.self),
            payload: try row.decode(column: "payload", as: Data.self),
            receivedAt: try row.decode(column: "received_at", as: Date.self))
    }

    /// Stores `entries` and lets the database number them (PostgreSQL: its sequence).
    static func insert(_ entries: [NewEntry], on db: any Database) async throws {
        try await insert(entries, firstCursor: nil, on: db)
    }

    /// Stores `entries` numbered from the next free cursor and answers them as stored. Only for
    /// SQLite inside a write transaction: the one writer reads the table's AUTOINCREMENT counter
    /// and numbers the rows itself, which saves reading every row back.
    static func insertNumbered(_ entries: [NewEntry], on db: any Database) async throws -> [AddressedRow] {
        let last = try await sql(db).raw("SELECT seq FROM sqlite_sequence WHERE name = \(bind: MailboxRecord.schema)").first()?
            .decode(column: "seq", as: Int64.self) ?? 0
        try await insert(entries, firstCursor: last + 1, on: db)
        return entries.enumerated().map { index, entry in
            AddressedRow(recipient: entry.recipient, row: Row(cursor: last + 1 + Int64(index), kind: entry.kind, sender: entry.sender,
                                                              messageID: entry.messageID, payload: entry.payload, receivedAt: entry.receivedAt))
        }
    }

    private static func insert(_ entries: [NewEntry], firstCursor: Int64?, on db: any Database) async throws {
        // SQLite takes at most 32,766 bound values per statement; 9 per row.
        for start in stride(from: 0, to: entries.count, by: 1000) {
            var columns = ["recipient_user_id", "recipient_device_id", "kind", "sender_user_id", "sender_device_id", "message_id", "payload", "received_at"]
            if firstCursor != nil { columns.append("cursor") }
            var insert = try sql(db).insert(into: MailboxRecord.schema).columns(columns)
            for index in start..<min(start + 1000, entries.count) {
                let entry = entries[index]
                var values: [any SQLExpression] = [
                    UUIDValue(entry.recipient.userID), UUIDValue(entry.recipient.deviceID), SQLBind(entry.kind.rawValue),
                    UUIDValue(entry.sender.userID), UUIDValue(entry.sender.deviceID), entry.messageID.map(UUIDValue.init) ?? SQLLiteral.null,
                    SQLBind(entry.payload), SQLBind(entry.receivedAt),
                ]
                if let firstCursor { values.append(SQLBind(firstCursor + Int64(index))) }
                insert = insert.values(values)
            }
            try await insert.run()
        }
    }

    /// `(VALUES (…), (…))`: the right-hand side of a row-value `IN`, which SQLite wants as a subquery.
    static func values(_ rows: [[any SQLExpression]]) -> any SQLExpression {
        SQLGroupExpression(SQLList([SQLRaw("VALUES"), SQLList(rows.map { SQLGroupExpression($0) })], separator: SQLRaw(" ")))
    }

    /// For each request, deletes those of its cursors that belong to its device, all in one
    /// statement; answers how many each request deleted.
    static func delete(_ requests: [(cursors: [Int64], address: DeviceAddress)], on db: any Database) async throws -> [Int] {
        struct Key: Hashable { let address: DeviceAddress; let cursor: Int64 }
        let keys = requests.flatMap { request in request.cursors.map { Key(address: request.address, cursor: $0) } }
        var deleted = Set<Key>()
        // SQLite takes at most 32,766 bound values per statement; 3 per cursor.
        for start in stride(from: 0, to: keys.count, by: 10_000) {
            let rows = try await sql(db).delete(from: MailboxRecord.schema)
                .where(SQLGroupExpression([SQLColumn("recipient_user_id"), SQLColumn("recipient_device_id"), SQLColumn("cursor")]), .in,
                       values(keys[start..<min(start + 10_000, keys.count)].map {
                           [UUIDValue($0.address.userID), UUIDValue($0.address.deviceID), SQLBind($0.cursor)]
                       }))
                .returning("recipient_user_id", "recipient_device_id", "cursor")
                .all()
            for row in rows {
                deleted.insert(Key(address: DeviceAddress(userID: try row.decode(column: "recipient_user_id", as: UUID.self),
                                                          deviceID: try row.decode(column: "recipient_device_id", as: UUID.self)),
                                   cursor: try row.decode(column: "cursor", as: Int64.self)))
            }
        }
        return requests.map { request in Set(request.cursors).filter { deleted.contains(Key(address: request.address, cursor: $0)) }.count }
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

/// A UUID bound the way each database stores it: for SQLite, Fluent's text form (`uuidString`)
/// passed as a `String`, which SQLiteKit binds directly instead of through its generic
/// `Encodable` path (on the relay's hot inserts that path cost more than SQLite itself);
/// PostgreSQL gets its native `uuid`.
struct UUIDValue: SQLExpression {
    let uuid: UUID

    init(_ uuid: UUID) { self.uuid = uuid }

    func serialize(to serializer: inout SQLSerializer) {
        if serializer.dialect.name == "sqlite" {
            serializer.write(bind: uuid.uuidString)
        } else {
            serializer.write(bind: uuid)
        }
    }
}

extension Date {
    /// Rounded to whole milliseconds, the precision the API shows.
    var wholeMilliseconds: Date { Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000) }
}
