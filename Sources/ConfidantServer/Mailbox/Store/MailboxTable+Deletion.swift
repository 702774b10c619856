import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// Deleting mailbox entries: acknowledged ones (with the shared bodies no entry refers to any
/// more), a whole account's or device's, and those past the retention.
extension MailboxTable {
    /// Cursors one `delete` statement takes: SQLite takes at most 32,766 bound values per
    /// statement, 3 per cursor.
    static let cursorsPerDelete = 10_000

    /// For each request, deletes those of its cursors that belong to its device, in one statement
    /// per `cursorsPerDelete`; answers how many each request deleted.
    static func delete(_ requests: [(cursors: [Int64], address: DeviceAddress)], on db: any Database) async throws
        -> [Int]
    {
        typealias Key = DeletedCursor
        let keys = requests.flatMap { request in request.cursors.map { Key(address: request.address, cursor: $0) } }
        var deleted = Set<Key>()
        var shared = Set<SharedBodyTable.Key>()
        for start in stride(from: 0, to: keys.count, by: cursorsPerDelete) {
            let rows = try await RelayDatabase.sql(db).delete(from: SQLName(MailboxRecord.schema))
                .where(
                    SQLGroupExpression([
                        SQLName(Column.recipientUserID), SQLName(Column.recipientDeviceID), SQLName(Column.cursor),
                    ]),
                    .in,
                    values(
                        keys[start..<min(start + cursorsPerDelete, keys.count)].map {
                            [UUIDValue($0.address.userID), UUIDValue($0.address.deviceID), SQLBind($0.cursor)]
                        })
                )
                .returning(
                    SQLName(Column.recipientUserID), SQLName(Column.recipientDeviceID), SQLName(Column.cursor),
                    SQLName(Column.kind), SQLName(Column.senderUserID), SQLName(Column.messageID)
                )
                .all()
            for row in rows {
                if try row.decode(column: Column.kind, as: String.self) == MailboxRecord.Kind.sharedEnvelope.rawValue,
                    let message = try row.decode(column: Column.messageID, as: UUID?.self)
                {
                    shared.insert(
                        .init(sender: try row.decode(column: Column.senderUserID, as: UUID.self), message: message))
                }
                deleted.insert(
                    Key(
                        address: DeviceAddress(
                            userID: try row.decode(column: Column.recipientUserID, as: UUID.self),
                            deviceID: try row.decode(column: Column.recipientDeviceID, as: UUID.self)),
                        cursor: try row.decode(column: Column.cursor, as: Int64.self)))
            }
        }
        try await SharedBodyTable.deleteUnreferenced(shared, on: db)
        return counts(of: requests, deleted: deleted)
    }

    /// A mailbox entry a `delete` removed.
    struct DeletedCursor: Hashable {
        let address: DeviceAddress
        let cursor: Int64
    }

    /// How many of its cursors each request deleted (a cursor it names twice counts once).
    static func counts(of requests: [(cursors: [Int64], address: DeviceAddress)], deleted: Set<DeletedCursor>)
        -> [Int]
    {
        requests.map { request in
            Set(request.cursors).filter { deleted.contains(DeletedCursor(address: request.address, cursor: $0)) }.count
        }
    }

    /// Deletes every entry in the mailboxes of `userID` (or of one of its devices).
    static func deleteAll(of userID: UUID, device deviceID: UUID? = nil, on db: any Database) async throws {
        var delete = try RelayDatabase.sql(db).delete(from: MailboxRecord.schema).where(
            Column.recipientUserID, .equal, UUIDValue(userID))
        if let deviceID { delete = delete.where(Column.recipientDeviceID, .equal, UUIDValue(deviceID)) }
        try await delete.run()
        try await SharedBodyTable.deleteOrphans(on: db)
    }

    /// Deletes entries received before `cutoff`; returns how many. The shared bodies they leave
    /// go with the maintenance's sweep that follows (`SharedBodyTable.deleteOrphans`).
    static func deleteReceived(before cutoff: Date, on db: any Database) async throws -> Int {
        try await RelayDatabase.sql(db).delete(from: MailboxRecord.schema).where(Column.receivedAt, .lessThan, cutoff)
            .returning(Column.cursor).all().count
    }
}
