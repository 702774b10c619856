import ConfidantCrypto
import Foundation
import GRDB

// The local store's rows as GRDB records. Ids are stored as lowercase text and times as seconds
// since 1970 (REAL), as the first version of the schema did; sealed columns hold AES-GCM boxes
// under the profile's `LocalDataKey`.

/// Common encoding for the store's records. The records read for every message (messages, keys,
/// the queues, contacts) decode their rows by hand (`init(row:)`): GRDB's `Decodable` path was a
/// measurable share of a message's cost (docs/BENCHMARKS.md). Writes still go through `Encodable`.
protocol StoreRecord: Codable, FetchableRecord, PersistableRecord {}

extension Row {
    /// A time stored as seconds since 1970.
    func date(_ column: String) throws -> Date {
        Date(timeIntervalSince1970: try decode(Double.self, forColumn: column))
    }

    func dateIfPresent(_ column: String) throws -> Date? {
        try decode(Double?.self, forColumn: column).map(Date.init(timeIntervalSince1970:))
    }

    /// A UUID stored as text (the store's form) or as 16 bytes. Not GRDB's decoding, which parses
    /// text with Foundation's `UUID(uuidString:)` and so `sscanf`: with a chat of 200 lines open,
    /// three per line on every fetch, that was 6 % of a client's CPU per message (perf).
    func uuid(_ column: String) throws -> UUID {
        guard let value = try uuidIfPresent(column) else {
            throw ConfidantKitError.storeDamaged("`\(column)` has no UUID")
        }
        return value
    }

    /// ``uuid(_:)``, nil for NULL.
    func uuidIfPresent(_ column: String) throws -> UUID? {
        try withUnsafeData(named: column) { data -> UUID? in
            guard let data else { return nil }
            let value = data.withUnsafeBytes { raw -> UUID? in
                raw.count == 16
                    ? UUID(uuid: raw.loadUnaligned(as: uuid_t.self))
                    : UUID(hyphenatedUTF8: raw.bindMemory(to: UInt8.self))
            }
            guard let value else { throw ConfidantKitError.storeDamaged("`\(column)` is not a UUID") }
            return value
        }
    }
}

extension StoreRecord {
    static func databaseUUIDEncodingStrategy(for column: String) -> DatabaseUUIDEncodingStrategy { .lowercaseString }
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        .timeIntervalSince1970
    }
}

/// What state an outgoing message is in; received messages and notices are `received`.
enum MessageState: String, Codable, DatabaseValueConvertible {
    case pending, sent, delivered, read, failed, received
}

extension ChatMessage.Direction: DatabaseValueConvertible {}

/// `meta`: one sealed or plain value per key.
struct MetaRecord: StoreRecord {
    static let databaseTableName = "meta"
    enum Key: String {
        case dataKey = "data_key"
        case account, cursor, prekeys
        /// When a synced write was last needed for a deferred one (`LocalStore.sync(through:)`).
        case syncedAt = "synced_at"
    }

    var key: String
    var value: Data

    enum Columns {
        static let key = Column(CodingKeys.key)
    }
}

/// `contact`: a user this profile knows, sealed, with a keyed hash of the e-mail for lookups.
struct ContactRecord: StoreRecord {
    static let databaseTableName = "contact"

    var userID: UUID
    var emailLookup: Data
    /// The JSON of `Contact`, sealed.
    var sealed: Data
    /// A digest of the keys the user verified (their safety number), nil when not verified.
    var verifiedDigest: Data?

    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case emailLookup = "email_lookup"
        case sealed
        case verifiedDigest = "verified_digest"
    }

    enum Columns {
        static let userID = Column(CodingKeys.userID)
        static let emailLookup = Column(CodingKeys.emailLookup)
        static let verifiedDigest = Column(CodingKeys.verifiedDigest)
    }
}

extension ContactRecord {
    init(row: Row) throws {
        userID = try row.uuid("user_id")
        emailLookup = try row.decode(forColumn: "email_lookup")
        sealed = try row.decode(forColumn: "sealed")
        verifiedDigest = try row.decode(forColumn: "verified_digest")
    }
}

/// `contact_key`: every device key seen for a user; retired keys stay, so old envelopes can
/// still be told apart from forgeries.
struct ContactKeyRecord: StoreRecord {
    static let databaseTableName = "contact_key"

    var userID: UUID
    var deviceID: UUID
    var fingerprint: String
    /// The serialized `PublicIdentity` (docs/PROTOCOL.md §2).
    var identity: Data
    var firstSeen: Date
    var retiredAt: Date?

    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case deviceID = "device_id"
        case fingerprint, identity
        case firstSeen = "first_seen"
        case retiredAt = "retired_at"
    }

    enum Columns {
        static let userID = Column(CodingKeys.userID)
        static let deviceID = Column(CodingKeys.deviceID)
        static let fingerprint = Column(CodingKeys.fingerprint)
        static let firstSeen = Column(CodingKeys.firstSeen)
        static let retiredAt = Column(CodingKeys.retiredAt)
    }
}

extension ContactKeyRecord {
    init(row: Row) throws {
        userID = try row.uuid("user_id")
        deviceID = try row.uuid("device_id")
        fingerprint = try row.decode(forColumn: "fingerprint")
        identity = try row.decode(forColumn: "identity")
        firstSeen = try row.date("first_seen")
        retiredAt = try row.dateIfPresent("retired_at")
    }
}

/// `message`: one line of a conversation, the body sealed.
struct MessageRecord: StoreRecord {
    static let databaseTableName = "message"

    /// Local order of arrival; nil until inserted.
    var seq: Int64?
    var messageID: UUID
    var peerID: UUID
    var direction: ChatMessage.Direction
    var senderDevice: UUID?
    var sentAt: Date
    /// The UTF-8 text, sealed; nil for an unreadable message.
    var body: Data?
    var unreadableReason: String?
    var state: MessageState
    var failure: String?
    var isRead: Bool
    /// The envelope version that carried a received message.
    var envelope: Int?
    /// When its author last edited it.
    var editedAt: Date?
    /// When its author deleted it for everyone (the body is gone then).
    var deletedAt: Date?
    /// When it disappears from this device.
    var expiresAt: Date?

    enum CodingKeys: String, CodingKey {
        case seq
        case messageID = "message_id"
        case peerID = "peer_id"
        case direction
        case senderDevice = "sender_device"
        case sentAt = "sent_at"
        case body
        case
            unreadableReason = "unreadable_reason"
        case state, failure
        case isRead = "is_read"
        case envelope
        case editedAt = "edited_at"
        case deletedAt = "deleted_at"
        case expiresAt = "expires_at"
    }

    enum Columns {
        static let seq = Column(CodingKeys.seq)
        static let body = Column(CodingKeys.body)
        static let editedAt = Column(CodingKeys.editedAt)
        static let deletedAt = Column(CodingKeys.deletedAt)
        static let expiresAt = Column(CodingKeys.expiresAt)
        static let sentAt = Column(CodingKeys.sentAt)
        static let messageID = Column(CodingKeys.messageID)
        static let peerID = Column(CodingKeys.peerID)
        static let direction = Column(CodingKeys.direction)
        static let state = Column(CodingKeys.state)
        static let failure = Column(CodingKeys.failure)
        static let isRead = Column(CodingKeys.isRead)
    }
}

extension MessageRecord {
    init(row: Row) throws {
        seq = try row.decode(forColumn: "seq")
        messageID = try row.uuid("message_id")
        peerID = try row.uuid("peer_id")
        direction = try row.decode(forColumn: "direction")
        senderDevice = try row.uuidIfPresent("sender_device")
        sentAt = try row.date("sent_at")
        body = try row.decode(forColumn: "body")
        unreadableReason = try row.decode(forColumn: "unreadable_reason")
        state = try row.decode(forColumn: "state")
        failure = try row.decode(forColumn: "failure")
        isRead = try row.decode(forColumn: "is_read")
        envelope = try row.decode(forColumn: "envelope")
        editedAt = try row.dateIfPresent("edited_at")
        deletedAt = try row.dateIfPresent("deleted_at")
        expiresAt = try row.dateIfPresent("expires_at")
    }
}

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

    enum CodingKeys: String, CodingKey {
        case messageID = "message_id"
        case peerID = "peer_id"
        case attempts, confirmed
        case createdAt = "created_at"
        case
            nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
    }

    enum Columns {
        static let messageID = Column(CodingKeys.messageID)
        static let attempts = Column(CodingKeys.attempts)
        static let nextAttemptAt = Column(CodingKeys.nextAttemptAt)
        static let lastError = Column(CodingKeys.lastError)
    }
}

extension OutboxRecord {
    init(row: Row) throws {
        messageID = try row.uuid("message_id")
        peerID = try row.uuid("peer_id")
        attempts = try row.decode(forColumn: "attempts")
        confirmed = try row.decode(forColumn: "confirmed")
        createdAt = try row.date("created_at")
        nextAttemptAt = try row.dateIfPresent("next_attempt_at")
        lastError = try row.decode(forColumn: "last_error")
    }
}

/// `session`: the sessions with one peer device, sealed, bound to the key they were started with.
struct SessionRow: StoreRecord {
    static let databaseTableName = "session"

    var userID: UUID
    var deviceID: UUID
    var fingerprint: String
    /// The serialized `SessionRecord`, sealed.
    var sealed: Data
    var updatedAt: Date

    enum CodingKeys: String, CodingKey {
        case userID = "user_id"
        case deviceID = "device_id"
        case fingerprint, sealed
        case updatedAt = "updated_at"
    }

    enum Columns {
        static let userID = Column(CodingKeys.userID)
        static let deviceID = Column(CodingKeys.deviceID)
        static let fingerprint = Column(CodingKeys.fingerprint)
    }
}

/// `attachment`: a file a message carries, its pointer (key, digest, blob) sealed. The encrypted
/// file, once this device has it, is `attachments/<attachment id>` in the profile.
struct AttachmentRecord: StoreRecord {
    static let databaseTableName = "attachment"

    var attachmentID: UUID
    var messageID: UUID
    var peerID: UUID
    var direction: ChatMessage.Direction
    var position: Int
    /// The JSON of `AttachmentPointer`, sealed.
    var sealed: Data

    enum CodingKeys: String, CodingKey {
        case attachmentID = "attachment_id"
        case messageID = "message_id"
        case peerID = "peer_id"
        case direction, position, sealed
    }

    enum Columns {
        static let attachmentID = Column(CodingKeys.attachmentID)
        static let messageID = Column(CodingKeys.messageID)
        static let peerID = Column(CodingKeys.peerID)
        static let direction = Column(CodingKeys.direction)
        static let position = Column(CodingKeys.position)
    }
}

/// `conversation_setting`: per conversation, the disappearing-message timer.
struct ConversationSettingRecord: StoreRecord {
    static let databaseTableName = "conversation_setting"

    var peerID: UUID
    /// Seconds; nil when messages stay.
    var expiresAfter: Int?

    enum CodingKeys: String, CodingKey {
        case peerID = "peer_id"
        case expiresAfter = "expires_after"
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
    /// Whether the account's other devices get it too (edits, deletions, timers; not receipts).
    var toOwnDevices: Bool
    var attempts: Int
    var nextAttemptAt: Date?
    var lastError: String?
    var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case seq
        case messageID = "message_id"
        case peerID = "peer_id"
        case sealed
        case toOwnDevices = "to_own_devices"
        case attempts
        case nextAttemptAt = "next_attempt_at"
        case lastError = "last_error"
        case createdAt = "created_at"
    }

    enum Columns {
        static let seq = Column(CodingKeys.seq)
        static let messageID = Column(CodingKeys.messageID)
        static let attempts = Column(CodingKeys.attempts)
        static let nextAttemptAt = Column(CodingKeys.nextAttemptAt)
        static let lastError = Column(CodingKeys.lastError)
    }
}

extension ControlRecord {
    init(row: Row) throws {
        seq = try row.decode(forColumn: "seq")
        messageID = try row.uuid("message_id")
        peerID = try row.uuid("peer_id")
        sealed = try row.decode(forColumn: "sealed")
        toOwnDevices = try row.decode(forColumn: "to_own_devices")
        attempts = try row.decode(forColumn: "attempts")
        nextAttemptAt = try row.dateIfPresent("next_attempt_at")
        lastError = try row.decode(forColumn: "last_error")
        createdAt = try row.date("created_at")
    }
}
