import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// The mailbox's hot paths — pages, storing and deleting entries, sent message ids,
/// conversations — in SQL through SQLKit: Fluent's models find their fields by reflection on
/// every row. The rest of the server keeps using the models.
enum MailboxTable {
    typealias Column = MailboxRecord.Column

    private static let entryColumns = [
        Column.cursor, Column.kind, Column.senderUserID, Column.senderDeviceID, Column.messageID,
        Column.payload, Column.receivedAt,
    ]

    /// Entries for `address` with a cursor greater than `after`, oldest first.
    static func page(of address: DeviceAddress, after: Int64, limit: Int, on db: any Database) async throws
        -> [MailboxEntry]
    {
        let entries = try await RelayDatabase.sql(db).select()
            .columns(entryColumns.map(SQLName.init))
            .from(SQLName(MailboxRecord.schema))
            .where(SQLName(Column.recipientUserID), .equal, SQLBind(address.userID))
            .where(SQLName(Column.recipientDeviceID), .equal, SQLBind(address.deviceID))
            .where(SQLName(Column.cursor), .greaterThan, SQLBind(after))
            .orderBy(SQLName(Column.cursor), SQLDirection.ascending)
            .limit(limit)
            .all()
            .map(entry)
        return try await SharedBodyTable.filling(entries, on: db)
    }

    private static func entry(_ row: any SQLRow) throws -> MailboxEntry {
        let kind = try row.decode(column: Column.kind, as: String.self)
        guard let kind = MailboxRecord.Kind(rawValue: kind) else {
            throw APIFailure(.internal, "A mailbox entry has an unknown kind \(kind).")
        }
        return MailboxEntry(
            cursor: try row.decode(column: Column.cursor, as: Int64.self), kind: kind,
            sender: DeviceAddress(
                userID: try row.decode(column: Column.senderUserID, as: UUID.self),
                deviceID: try row.decode(column: Column.senderDeviceID, as: UUID.self)),
            messageID: try row.decode(column: Column.messageID, as: UUID?.self),
            payload: try row.decode(column: Column.payload, as: Data.self),
            receivedAt: try row.decode(column: Column.receivedAt, as: Date.self))
    }

    /// Stores `entries` and lets the database number them, as another writer would, without a
    /// hand-over (for tests: the relay's writers use `insertHandingOver` and `insertNumbered`).
    static func insert(_ entries: [NewMailboxEntry], on db: any Database) async throws {
        try await insert(entries, firstCursor: nil, on: db)
    }

    /// PostgreSQL, inside a transaction that holds the locks of the entries' devices
    /// (`MailboxPublisher.store`): as `insert`, and answers the entries as stored, with what each
    /// device's stream must have had before them (`MailboxHandOver`). PostgreSQL answers a
    /// multi-row `VALUES` insert's `RETURNING` row by row as it inserts them, in their order, and
    /// numbers them as it goes: nil when the answer is not one row per entry with cursors
    /// increasing in each statement (the caller then wakes the streams to read instead). Only the
    /// two numbers come back: the writer decodes them for every row of every send group, and
    /// decoding a UUID by column name through PostgresKit costs several times an integer.
    /// `companions`: other inserts of the same transaction that ride in the first statement as
    /// data-modifying `WITH` queries, which PostgreSQL runs once and to completion whether or not
    /// anything reads them: one round trip each fewer. At most one chunk of each kind of
    /// companion, so that the statement stays under PostgreSQL's 65,535 bound values (8,000 here,
    /// at most 20,000 and 16,000 in theirs). `folding`: devices whose counts
    /// (`MailboxCountTable`) to fold in the same statement.
    static func insertHandingOver(
        _ entries: [NewMailboxEntry], alongside companions: [SQLInsert] = [], folding: [DeviceAddress] = [],
        on db: any Database
    ) async throws -> MailboxHandOver? {
        let rows = try await insert(
            entries, firstCursor: nil,
            alongside: companions.enumerated().map { ("companion_\($0)", $1) } + MailboxCountTable.folding(folding),
            returning: true, on: db)
        guard rows.count == entries.count else { return nil }
        var stored: [AddressedEntry] = []
        stored.reserveCapacity(entries.count)
        var before: [DeviceAddress: (first: Int64, previous: Int64)] = [:]
        var last: Int64 = 0
        for (index, (new, row)) in zip(entries, rows).enumerated() {
            let address = new.recipient
            let cursor = try row.decode(column: Column.cursor, as: Int64.self)
            guard cursor > last || index % rowsPerInsert == 0 else { return nil }
            last = cursor
            let previous = try row.decode(column: previousCursor, as: Int64.self)
            // Statements after the first see the rows of those before: the device's first row
            // says what preceded them all.
            if before[address].map({ cursor < $0.first }) ?? true { before[address] = (cursor, previous) }
            stored.append(new.stored(at: cursor))
        }
        stored.sort { $0.entry.cursor < $1.entry.cursor }
        return MailboxHandOver(entries: stored, following: before.mapValues(\.previous))
    }

    /// The column `insertHandingOver` reads the device's previous greatest cursor from.
    private static let previousCursor = "previous_cursor"

    /// The `WITH` query that reads, once per device among `entries`, the greatest cursor its
    /// mailbox holds (0 for none) — before the statement's own rows, which a statement does not
    /// see — and what `insertHandingOver` returns for each row: its cursor and that cursor of its
    /// device. One index lookup per device, not per row.
    private static func handOver(_ entries: ArraySlice<NewMailboxEntry>) -> (
        name: String, query: any SQLExpression, returning: [any SQLExpression]
    ) {
        let target = { SQLName.column($0, of: MailboxRecord.schema) }
        let name = "previous_cursors"
        let (user, device) = ("user_id", "device_id")
        var seen = Set<DeviceAddress>()
        let devices = entries.map(\.recipient).filter { seen.insert($0).inserted }
        let query = SQLQueryString(
            """
            SELECT d.\(ident: user), d.\(ident: device), (SELECT COALESCE(MAX(m.\(ident: Column.cursor)), 0) \
            FROM \(ident: MailboxRecord.schema) AS m WHERE m.\(ident: Column.recipientUserID) = d.\(ident: user) \
            AND m.\(ident: Column.recipientDeviceID) = d.\(ident: device)) AS \(ident: previousCursor) \
            FROM \(values(devices.map { [UUIDValue($0.userID), UUIDValue($0.deviceID)] })) \
            AS d(\(ident: user), \(ident: device))
            """)
        let previous = SQLQueryString(
            """
            (SELECT p.\(ident: previousCursor) FROM \(ident: name) AS p WHERE p.\(ident: user) = \
            \(target(Column.recipientUserID)) AND p.\(ident: device) = \(target(Column.recipientDeviceID)))
            """)
        return (name, query, [target(Column.cursor), SQLAlias(previous, as: SQLName(previousCursor))])
    }

    /// The table's AUTOINCREMENT counter on SQLite (the last cursor handed out), as a
    /// subquery, for `insertNumbered`.
    static let lastCursorSQLite = SQLQueryString(
        "(SELECT seq FROM sqlite_sequence WHERE name = '\(unsafeRaw: MailboxRecord.schema)')")

    /// Stores `entries` numbered from the next free cursor and answers them as stored. Only for
    /// SQLite inside a write transaction: the one writer reads the table's AUTOINCREMENT counter
    /// and numbers the rows itself, which saves reading every row back. `lastCursor`: the counter
    /// as read earlier in the same transaction (`lastCursorSQLite`), if it was.
    static func insertNumbered(_ entries: [NewMailboxEntry], lastCursor: Int64? = nil, on db: any Database)
        async throws -> [AddressedEntry]
    {
        let last: Int64
        if let lastCursor {
            last = lastCursor
        } else {
            last =
                try await RelayDatabase.sql(db).raw(SQLQueryString("SELECT \(lastCursorSQLite) AS seq")).first()?
                .decode(column: "seq", as: Int64?.self) ?? 0
        }
        let first = last + 1
        try await insert(entries, firstCursor: first, on: db)
        return entries.enumerated().map { index, new in new.stored(at: first + Int64(index)) }
    }

    /// Rows one insert statement stores: SQLite takes at most 32,766 bound values per statement,
    /// 9 per row.
    private static let rowsPerInsert = 1000

    @discardableResult
    private static func insert(
        _ entries: [NewMailboxEntry], firstCursor: Int64?,
        alongside companions: [(name: String, query: any SQLExpression)] = [], returning: Bool = false,
        on db: any Database
    ) async throws -> [any SQLRow] {
        var returned: [any SQLRow] = []
        for start in stride(from: 0, to: entries.count, by: rowsPerInsert) {
            var columns = [
                Column.recipientUserID, Column.recipientDeviceID, Column.kind, Column.senderUserID,
                Column.senderDeviceID,
                Column.messageID, Column.payload, Column.receivedAt,
            ]
            if firstCursor != nil { columns.append(Column.cursor) }
            var insert = try RelayDatabase.sql(db).insert(into: SQLName(MailboxRecord.schema))
                .columns(columns.map(SQLName.init))
            for index in start..<min(start + rowsPerInsert, entries.count) {
                let entry = entries[index]
                var values: [any SQLExpression] = [
                    UUIDValue(entry.recipient.userID), UUIDValue(entry.recipient.deviceID),
                    SQLBind(entry.kind.rawValue),
                    UUIDValue(entry.sender.userID), UUIDValue(entry.sender.deviceID),
                    entry.messageID.map(UUIDValue.init) ?? SQLLiteral.null,
                    SQLBind(entry.storedPayload), SQLBind(entry.receivedAt),
                ]
                if let firstCursor { values.append(SQLBind(firstCursor + Int64(index))) }
                insert = insert.values(values)
            }
            if start == 0 {
                for companion in companions {
                    insert = insert.with(companion.name, columns: [String](), as: companion.query)
                }
            }
            if returning {
                let handOver = handOver(entries[start..<min(start + rowsPerInsert, entries.count)])
                insert = insert.with(handOver.name, columns: [String](), as: handOver.query)
                returned += try await insert.returning(handOver.returning).all()
            } else {
                try await insert.run()
            }
        }
        return returned
    }

    /// `(VALUES (…), (…))`: the right-hand side of a row-value `IN`, which SQLite wants as a subquery.
    static func values(_ rows: [[any SQLExpression]]) -> any SQLExpression {
        SQLGroupExpression(
            SQLList([SQLRaw("VALUES"), SQLList(rows.map { SQLGroupExpression($0) })], separator: SQLRaw(" ")))
    }

    /// For each sender, how many distinct messages from them wait in the device's mailbox.
    static func unreadMessages(for address: DeviceAddress, on db: any Database) async throws -> [UUID: Int] {
        let rows = try await RelayDatabase.sql(db).select()
            .column(Column.senderUserID)
            .column(SQLFunction("COUNT", args: SQLDistinct(Column.messageID)), as: "unread")
            .from(MailboxRecord.schema)
            .where(Column.recipientUserID, .equal, address.userID)
            .where(Column.recipientDeviceID, .equal, address.deviceID)
            .where(
                Column.kind, .in, [MailboxRecord.Kind.envelope.rawValue, MailboxRecord.Kind.sharedEnvelope.rawValue]
            )
            .groupBy(Column.senderUserID)
            .all()
        var unread: [UUID: Int] = [:]
        for row in rows {
            unread[try row.decode(column: Column.senderUserID, as: UUID.self)] = try row.decode(
                column: "unread", as: Int.self)
        }
        return unread
    }
}
