import ConfidantCrypto
import Foundation
import GRDB

/// The queue of control messages — receipts, edits, deletions, timers — sealed at rest, sent in
/// the order they were queued once the outbox's messages are through.
extension LocalStore {
    /// A control message waiting for the server.
    struct QueuedControl: Sendable {
        let messageID: UUID
        let peer: UUID
        let payload: ChatPayload
        let attempts: Int
    }

    /// Queues a control message to `peer`; the account's other devices get a copy too, as the
    /// relay takes a message only if it reaches them (they keep edits, deletions and timers, and
    /// ignore their own account's receipts and the group changes they hold).
    /// `carrying`: the group message it is one member's copy of (see ``finishControls(_:)``).
    func queueControl(
        _ payload: ChatPayload, to peer: UUID, carrying message: UUID? = nil, now: Date,
        _ db: Database
    ) throws {
        let id = UUID.timeOrdered(at: now)
        // Prepared once, not the record's `insert`: every message received queues a receipt here.
        try db.cachedStatement(
            sql: """
                INSERT INTO control_outbox (message_id, peer_id, sealed, attempts, created_at, carries_message)
                VALUES (?, ?, ?, 0, ?, ?)
                """
        ).execute(arguments: [
            id.canonicalString, peer.canonicalString, try seal(try payload.serialized, .control(id)),
            now.timeIntervalSince1970, message?.canonicalString,
        ])
        // Set inside the transaction: a delivery that takes the mark before this commits reads
        // the queue after it (one connection, in turn) or looks again next time. One rolled
        // back leaves it set, which costs one read.
        controlsMark.store(true, ordering: .sequentiallyConsistent)
    }

    /// Whether the control queue may hold something, the mark cleared: a delivery reads the queue
    /// only then (it is nearly always empty, and a read is a transaction per message sent). Set when
    /// the store opens, when anything is queued, by ``controlsMayWait()``, and again by a
    /// delivery that leaves controls queued. Another process on the profile delivers what it
    /// queues; what it left behind is looked for when this one connects or syncs.
    func takeControlsMark() -> Bool {
        controlsMark.exchange(false, ordering: .sequentiallyConsistent)
    }

    /// Sets the mark: the next delivery reads the control queue.
    func controlsMayWait() {
        controlsMark.store(true, ordering: .sequentiallyConsistent)
    }

    /// Everything waiting, oldest first.
    func controls() throws -> [QueuedControl] {
        try read { db in
            try ControlRecord.fetchAll(db.cachedStatement(sql: "SELECT * FROM control_outbox ORDER BY seq")).map {
                record in
                let bytes = try open(record.sealed, .control(record.messageID))
                do {
                    return QueuedControl(
                        messageID: record.messageID, peer: record.peerID,
                        payload: try ChatPayload(serialized: bytes), attempts: record.attempts)
                } catch {
                    throw ConfidantKitError.storeDamaged("a queued control message does not decode (\(error))")
                }
            }
        }
    }

    /// Takes control messages out of the queue (sent, or not worth sending any more), in one
    /// transaction, not synced by itself: one that a power cut brings back goes again under its
    /// id, and the relay answers it as a duplicate. A group message whose last member's copy
    /// goes here moves from pending to sent.
    func finishControls(_ ids: [UUID]) throws {
        try write(.deferred) { db in
            // One statement per control: the delete hands back the group message it carried.
            let statement = try db.cachedStatement(
                sql: "DELETE FROM control_outbox WHERE message_id = ? RETURNING carries_message")
            var messages: Set<String> = []
            for id in ids {
                if let message: String = try Row.fetchOne(statement, arguments: [id.canonicalString])?[0] {
                    messages.insert(message)
                }
            }
            for message in messages
            where try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM control_outbox WHERE carries_message = ?", arguments: [message]) == 0
            {
                try db.execute(
                    sql: "UPDATE message SET state = ? WHERE message_id = ? AND direction = ? AND state = ?",
                    arguments: [MessageState.sent, message, ChatMessage.Direction.outgoing, MessageState.pending])
            }
        }
    }

    /// Records a transient failure; the control stays queued.
    func deferControl(_ id: UUID, until next: Date, reason: String) throws {
        _ = try write { db in
            try ControlRecord.filter(ControlRecord.Columns.messageID == id.canonicalString).updateAll(
                db, ControlRecord.Columns.attempts += 1,
                ControlRecord.Columns.nextAttemptAt.set(to: next.timeIntervalSince1970),
                ControlRecord.Columns.lastError.set(to: reason))
        }
    }
}
