import ConfidantCrypto
import Foundation
import SQLKit

/// PostgreSQL: how many entries wait in each device's mailbox, kept by the database itself so
/// that a send need not count them (SQLite's relay keeps its counts on its one write connection
/// instead, `PendingEntryCounts`).
///
/// Counting a device's entries walks its whole index range, for every send group with a message
/// to that device, and groups run one after another. Here a device's count is the sum of a few rows of changes: statement-level
/// triggers on the mailbox (`CountMailboxEntries`) add one row per device per `INSERT` (+n) and per
/// `DELETE` (−n) — whichever code path writes, retention, a deleted account's cascade included.
/// The rows are only ever inserted, never updated, so writers never wait on each other for
/// them (a single counter row per device would make every acknowledgement wait for the send
/// group holding it, and two groups could lock two devices' rows crosswise). A send group folds
/// the rows of each of its recipients that has `foldAt` or more into one, inside the statement
/// that stores its entries, where it holds those devices' advisory locks
/// (`MailboxPublisher.store`): no two folds of one device run at once.
enum MailboxCountTable {
    static let schema = "mailbox_counts"
    static let entries = "entries"

    /// A device's rows are folded into one once they are this many.
    static let foldAt = 16

    /// Devices one send group folds at most: two bound values each, beside the entries' 8,000 and
    /// the companions' 36,000 in the same statement, under PostgreSQL's 65,535. The rest fold in a
    /// later group.
    static let maximumFolded = 4_000

    /// `SUM` of the device's rows (its waiting entries), as a subquery correlated with the
    /// devices table's columns in `userID` and `deviceID`.
    static func pending(userID: any SQLExpression, deviceID: any SQLExpression) -> any SQLExpression {
        // SUM of a BIGINT is a NUMERIC; the count fits a BIGINT.
        ofDevice(
            SQLQueryString("CAST(COALESCE(SUM(\(ident: entries)), 0) AS BIGINT)"), userID: userID, deviceID: deviceID)
    }

    /// How many rows make up the device's count, as `pending`.
    static func rows(userID: any SQLExpression, deviceID: any SQLExpression) -> any SQLExpression {
        ofDevice(SQLFunction("COUNT", args: SQLLiteral.all), userID: userID, deviceID: deviceID)
    }

    /// `column` over the device's rows, as a correlated subquery.
    private static func ofDevice(_ column: any SQLExpression, userID: any SQLExpression, deviceID: any SQLExpression)
        -> any SQLExpression
    {
        SQLSubquery.select {
            $0
                .column(column)
                .from(SQLName(schema))
                .where(SQLName(MailboxRecord.Column.recipientUserID), .equal, userID)
                .where(SQLName(MailboxRecord.Column.recipientDeviceID), .equal, deviceID)
        }
    }

    /// The two data-modifying `WITH` queries that fold each device's rows into one (none when the
    /// sum is zero), to ride in the statement that stores a send group's entries. Both see the
    /// rows as they were when the statement began; the row the statement's own trigger adds comes
    /// after them and stays. Only for devices whose advisory locks the transaction holds.
    static func folding(_ devices: [DeviceAddress]) -> [(name: String, query: any SQLExpression)] {
        let devices = devices.prefix(maximumFolded)
        guard !devices.isEmpty else { return [] }
        let user = MailboxRecord.Column.recipientUserID
        let device = MailboxRecord.Column.recipientDeviceID
        let folded = "mailbox_counts_folded"
        let delete = SQLQueryString(
            """
            DELETE FROM \(ident: schema) WHERE (\(ident: user), \(ident: device)) IN \
            \(MailboxTable.values(devices.map { [UUIDValue($0.userID), UUIDValue($0.deviceID)] })) \
            RETURNING \(ident: user), \(ident: device), \(ident: entries)
            """)
        let insert = SQLQueryString(
            """
            INSERT INTO \(ident: schema) (\(ident: user), \(ident: device), \(ident: entries)) \
            SELECT \(ident: user), \(ident: device), SUM(\(ident: entries)) FROM \(ident: folded) \
            GROUP BY \(ident: user), \(ident: device) HAVING SUM(\(ident: entries)) <> 0
            """)
        return [(folded, delete), ("mailbox_counts_refolded", insert)]
    }

    /// Deletes the rows of devices that are no longer current (a retired device, a deleted
    /// account: their entries went with them); returns how many. For maintenance.
    @discardableResult
    static func deleteStale(on db: any SQLDatabase) async throws -> Int {
        typealias Device = DeviceRecord.Column
        let rows = try await db.raw(
            """
            DELETE FROM \(ident: schema) AS c WHERE NOT EXISTS (SELECT 1 FROM \(ident: DeviceRecord.schema) AS d \
            WHERE d.\(ident: Device.userID) = c.\(ident: MailboxRecord.Column.recipientUserID) \
            AND d.\(ident: Device.deviceID) = c.\(ident: MailboxRecord.Column.recipientDeviceID) \
            AND d.\(ident: Device.retiredAt) IS NULL) RETURNING 1 AS gone
            """
        ).all()
        return rows.count
    }
}
