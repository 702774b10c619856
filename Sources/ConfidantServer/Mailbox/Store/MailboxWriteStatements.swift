import ConfidantCrypto
import Foundation

/// The send group's and the acknowledgements' statements on SQLite, run on the relay's own write
/// connection (`SQLiteWriter`): the same reads and writes as `RecipientDirectory.load`,
/// `MailboxTable.insertNumbered`, `PostedMessageTable.insert`, `ConversationTable.touch` and
/// `MailboxTable.delete`, one row per step of a statement prepared once. Without a trip per
/// statement, a multi-row statement built anew for each group (SQLKit writing its text, SQLite
/// parsing it) costs more than stepping a prepared one per row.
enum MailboxWriteStatements {
    private typealias Entry = MailboxRecord.Column
    private typealias Device = DeviceRecord.Column
    private typealias Posted = PostedMessageRecord.Column
    private typealias Conversation = ConversationRecord.Column

    private static let lastCursor = "SELECT seq FROM sqlite_sequence WHERE name = '\(MailboxRecord.schema)'"

    /// The user if it exists and each of its current devices (or one row with NULL when it has
    /// none).
    private static let devices = """
        SELECT u."id", d."\(Device.deviceID)" \
        FROM "\(UserRecord.schema)" u LEFT JOIN "\(DeviceRecord.schema)" d \
        ON d."\(Device.userID)" = u."id" AND d."\(Device.retiredAt)" IS NULL \
        WHERE u."id" = ?1
        """

    /// How many entries wait in a device's mailbox: a walk of its whole index range on
    /// (recipient, cursor), so asked once per device (`PendingEntryCounts`).
    private static let countEntries = """
        SELECT COUNT(*) FROM "\(MailboxRecord.schema)" \
        WHERE "\(Entry.recipientUserID)" = ?1 AND "\(Entry.recipientDeviceID)" = ?2
        """

    private static let earlierReceipt = """
        SELECT "\(Posted.stored)", "\(Posted.receivedAt)" FROM "\(PostedMessageRecord.schema)" \
        WHERE "\(Posted.senderUserID)" = ?1 AND "\(Posted.messageID)" = ?2
        """

    private static let insertEntry = """
        INSERT INTO "\(MailboxRecord.schema)" ("\(Entry.recipientUserID)", "\(Entry.recipientDeviceID)", \
        "\(Entry.kind)", "\(Entry.senderUserID)", "\(Entry.senderDeviceID)", "\(Entry.messageID)", \
        "\(Entry.payload)", "\(Entry.receivedAt)", "\(Entry.cursor)") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
        """

    private static let insertPosted = """
        INSERT INTO "\(PostedMessageRecord.schema)" ("\(Posted.senderUserID)", "\(Posted.messageID)", \
        "\(Posted.stored)", "\(Posted.receivedAt)") VALUES (?1, ?2, ?3, ?4)
        """

    private static let touchConversation = """
        INSERT INTO "\(ConversationRecord.schema)" ("id", "\(Conversation.ownerID)", "\(Conversation.peerID)", \
        "\(Conversation.lastActivity)") VALUES (?1, ?2, ?3, ?4) \
        ON CONFLICT ("\(Conversation.ownerID)", "\(Conversation.peerID)") \
        DO UPDATE SET "\(Conversation.lastActivity)" = excluded."\(Conversation.lastActivity)"
        """

    /// The usual case of `touchConversation`, a pair that has a row: no id to make for it.
    private static let updateConversation = """
        UPDATE "\(ConversationRecord.schema)" SET "\(Conversation.lastActivity)" = ?3 \
        WHERE "\(Conversation.ownerID)" = ?1 AND "\(Conversation.peerID)" = ?2
        """

    /// Answers, for a shared envelope, the body it refers to (NULLs for anything else).
    private static let deleteEntry = """
        DELETE FROM "\(MailboxRecord.schema)" WHERE "\(Entry.recipientUserID)" = ?1 \
        AND "\(Entry.recipientDeviceID)" = ?2 AND "\(Entry.cursor)" = ?3 \
        RETURNING CASE WHEN "\(Entry.kind)" = '\(MailboxRecord.Kind.sharedEnvelope.rawValue)' \
        THEN "\(Entry.senderUserID)" END, "\(Entry.messageID)"
        """

    /// `RecipientDirectory.load(users, readingLastCursor: true, postedPairs:)`, inside the group's
    /// transaction; the mailboxes' counts kept on the connection (`PendingEntryCounts`) instead
    /// of counted for every group.
    static func directory(
        _ users: [UUID], postedPairs: [(sender: UUID, message: UUID)], on connection: SQLiteWriteConnection
    ) throws -> RecipientDirectory {
        let last = try connection.statement(lastCursor)
        let lastCursor = try last.step() ? last.int64(0) : 0

        var posted: [PostedMessageTable.Key: PostedMessageTable.Row] = [:]
        let receipt = try connection.statement(earlierReceipt)
        for pair in postedPairs {
            receipt.reset()
            try receipt.bind(1, pair.sender)
            try receipt.bind(2, pair.message)
            if try receipt.step() {
                posted[PostedMessageTable.Key(sender: pair.sender, message: pair.message)] = PostedMessageTable.Row(
                    stored: Int(receipt.int64(0)), receivedAt: receipt.date(1))
            }
        }

        var known = Set<UUID>()
        var devices: [UUID: Set<DeviceAddress>] = [:]
        let rows = try connection.statement(Self.devices)
        for user in users {
            rows.reset()
            try rows.bind(1, user)
            while try rows.step() {
                known.insert(user)
                // A user without a current device comes back once, with no device.
                guard let deviceID = try rows.uuid(1) else { continue }
                devices[user, default: []].insert(DeviceAddress(userID: user, deviceID: deviceID))
            }
        }
        let counts = connection.pendingEntries
        counts.check(dataVersion: try connection.dataVersion())
        var pending: [DeviceAddress: Int] = [:]
        for address in devices.values.joined() {
            let waiting: Int
            if let known = counts.count(of: address) {
                waiting = known
            } else {
                let count = try connection.statement(countEntries)
                try count.bind(1, address.userID)
                try count.bind(2, address.deviceID)
                waiting = try count.step() ? Int(count.int64(0)) : 0
                counts.counted(waiting, for: address)
            }
            if waiting > 0 { pending[address] = waiting }
        }
        return RecipientDirectory(
            users: known, devices: devices, pending: pending, lastCursor: lastCursor, posted: posted)
    }

    /// `MailboxTable.insertNumbered`: stores `entries` numbered after `lastCursor`, answered as stored.
    static func insert(_ entries: [NewMailboxEntry], after lastCursor: Int64, on connection: SQLiteWriteConnection)
        throws -> [AddressedEntry]
    {
        let insert = try connection.statement(insertEntry)
        var stored: [AddressedEntry] = []
        stored.reserveCapacity(entries.count)
        for (index, new) in entries.enumerated() {
            let cursor = lastCursor + 1 + Int64(index)
            insert.reset()
            try insert.bind(1, new.recipient.userID)
            try insert.bind(2, new.recipient.deviceID)
            try insert.bind(3, new.kind.rawValue)
            try insert.bind(4, new.sender.userID)
            try insert.bind(5, new.sender.deviceID)
            try insert.bind(6, new.messageID)
            try insert.bind(7, new.storedPayload)
            try insert.bind(8, new.receivedAt)
            try insert.bind(9, cursor)
            try insert.run()
            connection.pendingEntries.add(1, for: new.recipient)
            stored.append(new.stored(at: cursor))
        }
        return stored
    }

    /// `PostedMessageTable.insert`.
    static func insertPosted(
        _ accepted: [(key: PostedMessageTable.Key, row: PostedMessageTable.Row)], on connection: SQLiteWriteConnection
    ) throws {
        let insert = try connection.statement(insertPosted)
        for (key, row) in accepted {
            insert.reset()
            try insert.bind(1, key.sender)
            try insert.bind(2, key.message)
            try insert.bind(3, Int64(row.stored))
            try insert.bind(4, row.receivedAt)
            try insert.run()
        }
    }

    /// `ConversationTable.touch`: "last activity" for both directions of each pair. A pair that
    /// has its row is updated; only a new one is inserted, with an id made for it (an upsert would
    /// make two ids for every message and try an insert before it updates).
    static func touch(_ conversations: [UUID: Set<UUID>], at now: Date, on connection: SQLiteWriteConnection) throws {
        let update = try connection.statement(updateConversation)
        let touch = try connection.statement(touchConversation)
        for (sender, peers) in conversations {
            for peer in peers {
                for (owner, other) in [(sender, peer), (peer, sender)] {
                    update.reset()
                    try update.bind(1, owner)
                    try update.bind(2, other)
                    try update.bind(3, now)
                    try update.run()
                    if connection.changes > 0 { continue }
                    touch.reset()
                    // The row's id: from the system's generator (`UUID()` opens /dev/urandom for
                    // each), and sorting by time, as the table's index likes.
                    try touch.bind(1, UUID.timeOrdered(at: now))
                    try touch.bind(2, owner)
                    try touch.bind(3, other)
                    try touch.bind(4, now)
                    try touch.run()
                }
            }
        }
    }

    /// `MailboxTable.delete`: for each request, deletes those of its cursors that belong to its
    /// device; answers how many each request deleted.
    static func delete(_ requests: [(cursors: [Int64], address: DeviceAddress)], on connection: SQLiteWriteConnection)
        throws -> [Int]
    {
        typealias Key = MailboxTable.DeletedCursor
        let delete = try connection.statement(deleteEntry)
        var deleted = Set<Key>()
        var shared = Set<SharedBodyTable.Key>()
        for request in requests {
            for cursor in Set(request.cursors) {
                let key = Key(address: request.address, cursor: cursor)
                if deleted.contains(key) { continue }
                delete.reset()
                try delete.bind(1, request.address.userID)
                try delete.bind(2, request.address.deviceID)
                try delete.bind(3, cursor)
                // One row back for an entry deleted, none for a cursor not the device's.
                guard try delete.step() else { continue }
                if let sender = try delete.uuid(0), let message = try delete.uuid(1) {
                    shared.insert(SharedBodyTable.Key(sender: sender, message: message))
                }
                while try delete.step() {}
                deleted.insert(key)
                connection.pendingEntries.add(-1, for: request.address)
            }
        }
        try SharedBodyTable.deleteUnreferenced(shared, on: connection)
        return MailboxTable.counts(of: requests, deleted: deleted)
    }
}
