import ConfidantCrypto
import Foundation
import GRDB

/// `outbox`: outgoing messages waiting for the server, delivered in the order they were written.
struct OutboxRecord: StoreRecord {
    static let databaseTableName = "outbox"

    var messageID: UUID
    var peerID: UUID
    var attempts: Int
    /// The user chose to send despite a verified contact's key change.
    var confirmed: Bool
    var createdAt: Date
    /// When the next automatic attempt is due, after a transient failure.
    var nextAttemptAt: Date?
    /// Why the last attempt did not get through.
    var lastError: String?

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case messageID = "message_id"
        case peerID = "peer_id"
        case attempts, confirmed
        case createdAt = "created_at"
        case
            nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
    }

    typealias Columns = CodingKeys
}

extension OutboxRecord {
    init(row: Row) throws {
        messageID = try row.uuid(CodingKeys.messageID)
        peerID = try row.uuid(CodingKeys.peerID)
        attempts = try row.value(CodingKeys.attempts)
        confirmed = try row.value(CodingKeys.confirmed)
        createdAt = try row.date(CodingKeys.createdAt)
        nextAttemptAt = try row.dateIfPresent(CodingKeys.nextAttemptAt)
        lastError = try row.value(CodingKeys.lastError)
    }
}

/// `control_outbox`: sealed control messages (receipts, edits, deletions, timers) waiting for the
/// server, delivered in the order they were queued after the messages of the outbox.
struct ControlRecord: StoreRecord {
    static let databaseTableName = "control_outbox"

    var seq: Int64?
    var messageID: UUID
    var peerID: UUID
    /// The serialized `ChatPayload`, sealed.
    var sealed: Data
    var attempts: Int
    var nextAttemptAt: Date?
    var lastError: String?
    var createdAt: Date

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case seq
        case messageID = "message_id"
        case peerID = "peer_id"
        case sealed
        case attempts
        case nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
        case createdAt = "created_at"
    }

    typealias Columns = CodingKeys
}

extension ControlRecord {
    init(row: Row) throws {
        seq = try row.value(CodingKeys.seq)
        messageID = try row.uuid(CodingKeys.messageID)
        peerID = try row.uuid(CodingKeys.peerID)
        sealed = try row.value(CodingKeys.sealed)
        attempts = try row.value(CodingKeys.attempts)
        nextAttemptAt = try row.dateIfPresent(CodingKeys.nextAttemptAt)
        lastError = try row.value(CodingKeys.lastError)
        createdAt = try row.date(CodingKeys.createdAt)
    }
}
