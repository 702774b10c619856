import ConfidantCrypto
import Foundation
import GRDB

/// The outbox: outgoing messages waiting for the server, in the order they were written.
extension LocalStore {
    /// A message waiting in the outbox.
    struct QueuedMessage: Sendable {
        let message: ChatMessage
        let confirmed: Bool
        let attempts: Int
        let nextAttemptAt: Date?
        let lastError: String?
        /// Whether it has files, whose rows sending reads (uploading them first): a text alone
        /// is sent without that read.
        let hasAttachments: Bool
    }

    /// Stores a new outgoing message and queues it, in one transaction, not synced by itself:
    /// the sender syncs the log through this commit before it answers when the message is still
    /// queued then, and in the background once the relay took it (`syncLogSoon`).
    func queue(_ message: NewMessage, confirmed: Bool, builtOn context: SendingContext? = nil, now: Date) throws -> (
        message: ChatMessage, commit: UInt64
    ) {
        let (stored, commit) = try countedWrite(.deferred) { db in
            try queueRows(message, confirmed: confirmed, builtOn: context, now: now, db)
        }
        return (stored, commit)
    }

    /// A new outgoing message to queue with others (``queue(_:)``): what it was built on, as for
    /// ``queue(_:confirmed:builtOn:now:)``, and queued at its own `sentAt`.
    struct NewQueued {
        let message: NewMessage
        let confirmed: Bool
        let context: SendingContext?
    }

    /// Stores and queues several new outgoing messages, in this order, as
    /// ``queue(_:confirmed:builtOn:now:)`` does one, in one transaction: a window of sends queues
    /// those its senders handed it with one commit instead of one each (`MessageSender`). A
    /// message built on a context that changed since is left out (its check forgets every context
    /// kept, so those after it built on contexts read before are left out too, as each would be in
    /// a transaction of its own); any other failure writes none of them.
    /// - Returns: each message as stored, nil for one left out as stale (``SendingContexts/Stale``
    ///   thrown for it alone), in order; and the commit.
    func queue(_ messages: [NewQueued]) throws -> (stored: [ChatMessage?], commit: UInt64) {
        let (stored, commit) = try countedWrite(.deferred) { db in
            try messages.map { new -> ChatMessage? in
                do {
                    return try queueRows(
                        new.message, confirmed: new.confirmed, builtOn: new.context, now: new.message.sentAt, db)
                } catch is SendingContexts.Stale {
                    return nil
                }
            }
        }
        return (stored, commit)
    }

    /// Stores and queues a new outgoing message as ``queue(_:confirmed:now:)`` does, and seals it
    /// in the same transaction (``sealing``): the message, the outbox row and the sessions the
    /// sealing moved on commit together, synced at once only when the sealing reserved message
    /// numbers (else the sender syncs them as after ``queue(_:confirmed:now:)``). Only when the
    /// outbox held nothing before it (nothing it could overtake) and `seal` can do without the
    /// network; otherwise nothing is written and the answer is nil, for the usual path (queue,
    /// then deliver the outbox).
    func queueSealed<Sealed>(
        _ message: NewMessage, confirmed: Bool, builtOn context: SendingContext? = nil, now: Date,
        seal: (StoreTransaction) throws -> Sealed?
    ) throws -> (message: ChatMessage, sealed: Sealed, commit: UInt64)? {
        do {
            let ((stored, sealed), commit) = try countedTransaction(sealing) { transaction in
                let waiting = try Bool.fetchOne(
                    transaction.db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM outbox)"))
                guard waiting == false else { throw NotAlone() }
                let stored = try queueRows(
                    message, confirmed: confirmed, builtOn: context, now: now, transaction.db)
                guard let sealed = try seal(transaction) else { throw NotAlone() }
                return (stored, sealed)
            }
            return (stored, sealed, commit)
        } catch is NotAlone {
            return nil
        }
    }

    /// `queueSealed` found the message could not be sealed alone: nothing is written.
    private struct NotAlone: Error {}

    /// - Parameter context: what the message was built on (its timer, the contact and keys it was
    ///   checked against); `SendingContexts.Stale` is thrown, and nothing written, when it
    ///   changed since it was read.
    private func queueRows(
        _ message: NewMessage, confirmed: Bool, builtOn context: SendingContext?, now: Date, _ db: Database
    ) throws -> ChatMessage {
        if let context { try sendingContexts.check(context.stamp, db) }
        guard let stored = try insert([message], db).first else {
            throw ConfidantKitError.storeDamaged("the new message was not stored (its id is taken)")
        }
        // A statement prepared once, not the record's `insert`: GRDB's `Encodable` path builds
        // a container of the columns each time.
        try db.cachedStatement(
            sql: "INSERT INTO outbox (message_id, peer_id, attempts, confirmed, created_at) VALUES (?, ?, 0, ?, ?)"
        ).execute(arguments: [
            message.id.canonicalString, message.peer.canonicalString, confirmed, now.timeIntervalSince1970,
        ])
        return stored
    }

    /// The outbox's messages, in the order they were written, and whether each has files (by
    /// the attachments' primary key). CROSS JOIN keeps SQLite's join order: from the few outbox
    /// rows to their messages, then sorted. Left to choose, it walked the whole message table in
    /// `seq` order (no sort needed) and looked each row up in the outbox: every message ever
    /// written, read for each delivery.
    static let outboxQuery = """
        SELECT m.*, o.confirmed AS outbox_confirmed, o.attempts AS outbox_attempts, o.next_attempt_at AS outbox_next,
               o.last_error AS outbox_error,
               EXISTS (SELECT 1 FROM attachment a
                       WHERE a.message_id = m.message_id AND a.peer_id = m.peer_id AND a.direction = m.direction)
                 AS outbox_has_attachments
        FROM outbox o CROSS JOIN message m ON m.message_id = o.message_id AND m.direction = ?
        ORDER BY m.seq
        """

    /// Everything waiting, in the order the messages were written (the local sequence, so a
    /// message retried later keeps its place).
    func outbox() throws -> [QueuedMessage] {
        try outbox(excluding: [])
    }

    /// ``outbox()`` for a window of sends that holds some of it already: without the messages in
    /// `known`, and with those in `reusing` (just queued, as they were queued) in their places, so
    /// that neither's row is decoded (which opens its sealed body).
    func outbox(excluding known: Set<UUID>, reusing: [UUID: QueuedMessage] = [:]) throws -> [QueuedMessage] {
        try read { db in
            // Each row decoded while the cursor is on it: a row copied out (`Row.fetchAll`) finds a
            // column by name by lowercasing every column's name, for each of its 20 columns (GRDB's
            // `StatementCopyRowImpl`); the statement's row looks names up in a table built once.
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: Self.outboxQuery), arguments: [ChatMessage.Direction.outgoing])
            var queued: [QueuedMessage] = []
            while let row = try rows.next() {
                if !known.isEmpty || !reusing.isEmpty {
                    let id = try row.uuid("message_id")
                    if known.contains(id) { continue }
                    if let held = reusing[id] {
                        queued.append(held)
                        continue
                    }
                }
                queued.append(
                    QueuedMessage(
                        message: try chatMessage(MessageRecord(row: row)), confirmed: row["outbox_confirmed"],
                        attempts: row["outbox_attempts"],
                        nextAttemptAt: (row["outbox_next"] as Double?).map(Date.init(timeIntervalSince1970:)),
                        lastError: row["outbox_error"], hasAttachments: row["outbox_has_attachments"]))
            }
            return queued
        }
    }

    /// Marks outgoing messages sent, or failed for good, and takes them out of the outbox, in one
    /// transaction: one message, or those a window of sends (`StreamWindow`) got
    /// back together.
    /// Marking sent is not synced by itself: if a power cut loses it, the message goes again
    /// under its id and the relay answers it as a duplicate. A failure is synced: the message must
    /// not go after all.
    func finish(_ ids: [UUID], failure: DeliveryFailure?) throws {
        let failure = failure?.stored
        try write(failure == nil ? .deferred : .synced) { db in
            // Only a pending message: a receipt may have moved it on already. Cached statements:
            // this runs for every message sent.
            let update = try db.cachedStatement(
                sql: "UPDATE message SET state = ?, failure = ? WHERE message_id = ? AND direction = ? AND state = ?")
            let dequeue = try db.cachedStatement(sql: "DELETE FROM outbox WHERE message_id = ?")
            for id in ids {
                try update.execute(arguments: [
                    failure == nil ? MessageState.sent : .failed, failure, id.canonicalString,
                    ChatMessage.Direction.outgoing, MessageState.pending,
                ])
                try dequeue.execute(arguments: [id.canonicalString])
            }
        }
    }

    /// Records a transient failure of the outbox's first message: it stays queued until
    /// `nextAttempt`, and so does everything behind it (they go in order), which says so too.
    func deferDelivery(of id: UUID, until nextAttempt: Date?, reason: String) throws {
        _ = try write { db in
            try OutboxRecord.filter(OutboxRecord.Columns.messageID == id.canonicalString).updateAll(
                db, OutboxRecord.Columns.attempts += 1)
            try OutboxRecord.updateAll(
                db, OutboxRecord.Columns.nextAttemptAt.set(to: nextAttempt?.timeIntervalSince1970),
                OutboxRecord.Columns.lastError.set(to: reason))
            // The outbox is a WITHOUT ROWID table, whose rows SQLite's update hook never reports:
            // the open chats and the other observations learn of this change from here. (Every
            // other write of the outbox writes the message rows it concerns too.)
            try db.notifyChanges(in: Table("outbox"))
        }
    }

    /// Puts a failed message back in the outbox; false when it has not failed.
    func requeue(_ id: UUID, confirmed: Bool, now: Date) throws -> Bool {
        try write { db in
            guard
                let record = try MessageRecord.filter(
                    MessageRecord.Columns.messageID == id.canonicalString
                        && MessageRecord.Columns.direction == ChatMessage.Direction.outgoing
                        && MessageRecord.Columns.state == MessageState.failed
                )
                .fetchOne(db)
            else { return false }
            try MessageRecord.filter(
                MessageRecord.Columns.messageID == id.canonicalString
                    && MessageRecord.Columns.direction == ChatMessage.Direction.outgoing
            )
            .updateAll(
                db, MessageRecord.Columns.state.set(to: MessageState.pending),
                MessageRecord.Columns.failure.set(to: nil))
            try OutboxRecord(messageID: id, peerID: record.peerID, attempts: 0, confirmed: confirmed, createdAt: now)
                .insert(db, onConflict: .ignore)
            return true
        }
    }
}

extension LocalStore.QueuedMessage {
    /// A message as it was just stored and queued: not tried yet, its rows not read back.
    init(justQueued message: ChatMessage, confirmed: Bool) {
        self.init(
            message: message, confirmed: confirmed, attempts: 0, nextAttemptAt: nil, lastError: nil,
            hasAttachments: !message.attachments.isEmpty)
    }
}
