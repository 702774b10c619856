import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// Who a group of messages may go to: which of their users exist, those users' current devices,
/// and how many entries wait in each of those devices' mailboxes; and, read in the same
/// statement, which of the group's messages were stored before.
struct RecipientDirectory: Sendable {
    let users: Set<UUID>
    let devices: [UUID: Set<DeviceAddress>]
    /// Entries waiting per current device (devices with none are left out).
    let pending: [DeviceAddress: Int]
    /// PostgreSQL: how many rows of changes make up each current device's count
    /// (`MailboxCountTable`; devices with none are left out).
    var countRows: [DeviceAddress: Int] = [:]
    /// SQLite, when asked for: the mailbox's last cursor handed out (its AUTOINCREMENT counter),
    /// read in the same statement (`MailboxTable.insertNumbered`).
    let lastCursor: Int64?
    /// What was stored for those of the asked-for (sender, message) pairs that were sent before.
    let posted: [PostedMessageTable.Key: PostedMessageTable.Row]
    /// PostgreSQL, when asked for: whether the statement took all the locks (`MailboxDeviceLocks`).
    var locksTaken = false

    /// Users one statement looks up.
    static let usersPerStatement = 10_000

    /// One statement (per `usersPerStatement` users) for all three, since every statement is a
    /// trip to the database's thread and back (docs/BENCHMARKS.md): each user, joined to its
    /// current devices, each with a count of its mailbox; on SQLite, when `readingLastCursor`,
    /// also the mailbox's counter that the group's insert numbers its rows from. The earlier
    /// receipts of `postedPairs` come in the first statement too (`UNION ALL`), one trip fewer.
    /// On SQLite the count walks the device's whole index range (its send groups keep the counts
    /// on their own connection instead, `MailboxWriteStatements.directory`); PostgreSQL, which
    /// several relays may write at once, sums the device's few rows in `MailboxCountTable`.
    /// `locks` (PostgreSQL): the send group's device locks and notice, taken in the first
    /// statement too (one round trip fewer); `locksTaken` says whether they were. The directory is
    /// read as of the statement's start, as it was when the locks came in a later statement.
    static func load(
        _ users: [UUID], readingLastCursor: Bool = false, postedPairs: [(sender: UUID, message: UUID)] = [],
        taking locks: MailboxDeviceLocks? = nil, on db: any Database
    ) async throws -> RecipientDirectory {
        typealias Device = DeviceRecord.Column
        typealias Entry = MailboxRecord.Column
        let user = { SQLName.column($0, of: UserRecord.schema) }
        let device = { SQLName.column($0, of: DeviceRecord.schema) }
        let mailbox = { SQLName.column($0, of: MailboxRecord.schema) }
        let sql = try RelayDatabase.sql(db)
        let postgres = sql.dialect.name != "sqlite"
        let count =
            postgres
            ? MailboxCountTable.pending(userID: device(Device.userID), deviceID: device(Device.deviceID))
            : SQLSubquery.select {
                $0
                    .column(SQLFunction("COUNT", args: SQLLiteral.all))
                    .from(SQLName(MailboxRecord.schema))
                    .where(mailbox(Entry.recipientUserID), .equal, device(Device.userID))
                    .where(mailbox(Entry.recipientDeviceID), .equal, device(Device.deviceID))
            }
        // PostgreSQL binds at most 65,535 values per statement (SQLite's limit depends on how it
        // was built; 32,766 by default), and a group's messages may name more users than that
        // (1,024 messages of up to 256 recipients each), so they go in chunks.
        let columns: [(value: any SQLExpression, name: String)] =
            (readingLastCursor ? [(MailboxTable.lastCursorSQLite, "last_cursor")] : []) + [
                (user("id"), "known_user"), (device(Device.deviceID), "device"), (count, "pending"),
            ]
            + (postgres
                ? [
                    (
                        MailboxCountTable.rows(userID: device(Device.userID), deviceID: device(Device.deviceID)),
                        "count_rows"
                    )
                ]
                : [])
        let lockColumns = locks?.columns ?? []
        var rows: [any SQLRow] = []
        for start in stride(from: 0, to: users.count, by: usersPerStatement) {
            let columns = start == 0 ? columns + lockColumns : columns
            var select = sql.select()
            for column in columns { select = select.column(column.value, as: SQLName(column.name)) }
            for name in PostedMessageTable.receiptColumns { select = select.column(SQLLiteral.null, as: SQLName(name)) }
            select =
                select
                .from(SQLName(UserRecord.schema))
                .join(
                    SQLName(DeviceRecord.schema), method: SQLJoinMethod.left,
                    on: SQLBinaryExpression(
                        SQLBinaryExpression(device(Device.userID), .equal, user("id")), .and,
                        SQLBinaryExpression(device(Device.retiredAt), .is, SQLLiteral.null))
                )
                .where(
                    user("id"), .in, SQLBind.group(Array(users[start..<min(start + usersPerStatement, users.count)]))
                )
            if start == 0, !postedPairs.isEmpty {
                rows +=
                    try await select.union(all: {
                        PostedMessageTable.receipts(for: postedPairs, leading: columns.map(\.name), in: $0)
                    }).all()
            } else {
                rows += try await select.all()
            }
        }
        var known = Set<UUID>()
        var devices: [UUID: Set<DeviceAddress>] = [:]
        var pending: [DeviceAddress: Int] = [:]
        var countRows: [DeviceAddress: Int] = [:]
        var lastCursor: Int64?
        var posted: [PostedMessageTable.Key: PostedMessageTable.Row] = [:]
        var locksTaken = false
        for row in rows {
            if let receipt = try PostedMessageTable.receipt(in: row) {
                posted[receipt.key] = receipt.row
                continue
            }
            if !locksTaken, let tookAll = locks?.tookAll(in: row) { locksTaken = tookAll }
            if readingLastCursor { lastCursor = try row.decode(column: "last_cursor", as: Int64?.self) ?? 0 }
            let userID = try row.decode(column: "known_user", as: UUID.self)
            known.insert(userID)
            // A user without a current device comes back once, with no device.
            guard let deviceID = try row.decode(column: "device", as: UUID?.self) else { continue }
            let address = DeviceAddress(userID: userID, deviceID: deviceID)
            devices[userID, default: []].insert(address)
            let waiting = try row.decode(column: "pending", as: Int.self)
            if waiting > 0 { pending[address] = waiting }
            if postgres {
                let changes = try row.decode(column: "count_rows", as: Int.self)
                if changes > 0 { countRows[address] = changes }
            }
        }
        return RecipientDirectory(
            users: known, devices: devices, pending: pending, countRows: countRows, lastCursor: lastCursor,
            posted: posted, locksTaken: locksTaken)
    }

    /// A message must reach every current device of each recipient and every other current
    /// device of the sender, and no retired one, so that no device silently misses it.
    func check(_ recipients: [DeviceAddress], sender: DeviceAddress) throws(APIFailure) {
        if namesExactlyTheCurrentDevices(recipients, sender: sender) { return }
        let involved = Set(recipients.map(\.userID)).union([sender.userID])
        if let missing = involved.subtracting(users).first {
            throw APIFailure(.unknownUser, "User \(missing.canonicalString) does not exist (any more).")
        }
        let expected = involved.reduce(into: Set<DeviceAddress>()) { $0.formUnion(devices[$1] ?? []) }.subtracting([
            sender
        ])
        let given = Set(recipients)
        guard given == expected else {
            let missing = expected.subtracting(given).map(\.description).sorted()
            let stale = given.subtracting(expected).map(\.description).sorted()
            throw APIFailure(
                .deviceMismatch,
                """
                Devices changed: reload the recipients' keys and seal again. Missing: \(missing.isEmpty ? "none" : missing.joined(separator: ", ")); \
                no longer current: \(stale.isEmpty ? "none" : stale.joined(separator: ", ")).
                """)
        }
    }

    /// The usual case of `check`, without building sets (hashing was a twentieth of the
    /// relay's CPU per message in a profile of the send group): the recipients are distinct,
    /// none is the sender, each is a current device of its user, and they are as many as the
    /// current devices of all users involved minus the sender. Devices of different users are
    /// distinct, so the recipients are then exactly those devices. False for anything else,
    /// and for large fan-outs, which `check` then decides (and explains) with sets.
    private func namesExactlyTheCurrentDevices(_ recipients: [DeviceAddress], sender: DeviceAddress) -> Bool {
        guard recipients.count <= 16, users.contains(sender.userID) else { return false }
        let senderDevices = devices[sender.userID]
        var expected = (senderDevices?.count ?? 0) - (senderDevices?.contains(sender) == true ? 1 : 0)
        var counted = [sender.userID]
        for (index, recipient) in recipients.enumerated() {
            guard recipient != sender, devices[recipient.userID]?.contains(recipient) == true else { return false }
            for earlier in recipients[..<index] where earlier == recipient { return false }
            if !counted.contains(recipient.userID) {
                counted.append(recipient.userID)
                expected += devices[recipient.userID]?.count ?? 0
            }
        }
        return expected == recipients.count
    }
}
