import ConfidantCrypto
import Crypto
import Foundation
import GRDB

/// The profile's SQLite database (GRDB): account, contacts and their keys, conversations,
/// messages and the outbox. Message bodies, notices, contact names and e-mails and the account
/// (with its token) are sealed under the ``LocalDataKey``; ids, times, states and public keys are not.
final class LocalStore: Sendable {
    let database: DatabaseQueue
    private let dataKey: LocalDataKey

    private init(database: DatabaseQueue, dataKey: LocalDataKey) {
        self.database = database
        self.dataKey = dataKey
    }

    /// Opens the store at `url`, creating it (with a new data key) when it does not exist.
    static func open(at url: URL, identity: PrivateIdentity) throws -> LocalStore {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            // WAL: one fsync per transaction instead of several (synchronous stays FULL, so a
            // message acknowledged to the server survives a power loss once stored).
            try db.execute(sql: "PRAGMA journal_mode = WAL")
        }
        let database = try DatabaseQueue(path: url.path, configuration: configuration)
        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        try migrator.migrate(database)
        let dataKey = try database.write { db -> LocalDataKey in
            if let wrapped = try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'data_key'") {
                return try LocalDataKey.unwrap(wrapped, with: identity)
            }
            let key = LocalDataKey.generate()
            try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('data_key', ?)", arguments: [try key.wrapped(for: identity)])
            return key
        }
        return LocalStore(database: database, dataKey: dataKey)
    }

    /// Rewraps the data key for a new device key (nothing else is re-encrypted).
    func rewrap(for identity: PrivateIdentity) throws {
        let wrapped = try dataKey.wrapped(for: identity)
        try database.write { db in try db.execute(sql: "UPDATE meta SET value = ? WHERE key = 'data_key'", arguments: [wrapped]) }
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
                CREATE TABLE contact (
                    user_id TEXT PRIMARY KEY,
                    email_lookup BLOB NOT NULL UNIQUE,
                    sealed BLOB NOT NULL,
                    verified_digest BLOB);
                CREATE TABLE contact_key (
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,
                    identity BLOB NOT NULL,
                    first_seen REAL NOT NULL,
                    retired_at REAL,
                    PRIMARY KEY (user_id, device_id, fingerprint));
                CREATE TABLE message (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    message_id TEXT NOT NULL,
                    peer_id TEXT NOT NULL,
                    direction INTEGER NOT NULL,
                    sender_device TEXT,
                    sent_at REAL NOT NULL,
                    body BLOB,
                    unreadable_reason TEXT,
                    state TEXT NOT NULL,
                    failure TEXT,
                    is_read INTEGER NOT NULL DEFAULT 0,
                    UNIQUE (message_id, peer_id, direction));
                CREATE INDEX message_by_peer ON message (peer_id, seq);
                CREATE TABLE outbox (
                    message_id TEXT PRIMARY KEY,
                    peer_id TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    confirmed INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL);
                """)
        }
        // Sessions (envelope v2) per peer device, bound to the identity they were started with;
        // which envelope version carried each received message.
        migrator.registerMigration("v2-sessions") { db in
            try db.execute(sql: """
                ALTER TABLE message ADD COLUMN envelope INTEGER;
                CREATE TABLE session (
                    user_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,
                    sealed BLOB NOT NULL,
                    updated_at REAL NOT NULL,
                    PRIMARY KEY (user_id, device_id));
                """)
        }
        return migrator
    }

    // MARK: Account and cursor

    func account() throws -> AccountState? {
        try database.read { db in
            guard let sealed = try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'account'") else { return nil }
            return try JSONDecoder().decode(AccountState.self, from: dataKey.open(sealed, context: "meta|account"))
        }
    }

    func saveAccount(_ account: AccountState) throws {
        let sealed = try dataKey.seal(JSONEncoder().encode(account), context: "meta|account")
        try database.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('account', ?)", arguments: [sealed])
        }
    }

    func cursor() throws -> Int64 {
        try database.read { db in try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'cursor'") ?? 0 }
    }

    // MARK: Contacts and keys

    func saveContact(_ contact: Contact) throws {
        let id = contact.id.canonicalString
        let sealed = try dataKey.seal(JSONEncoder().encode(contact), context: "contact|\(id)")
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO contact (user_id, email_lookup, sealed) VALUES (?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET email_lookup = excluded.email_lookup, sealed = excluded.sealed
                """, arguments: [id, dataKey.lookup(contact.email.lowercased()), sealed])
        }
    }

    func contact(id: UUID) throws -> Contact? {
        let key = id.canonicalString
        return try database.read { db in
            guard let sealed = try Data.fetchOne(db, sql: "SELECT sealed FROM contact WHERE user_id = ?", arguments: [key]) else { return nil }
            return try JSONDecoder().decode(Contact.self, from: dataKey.open(sealed, context: "contact|\(key)"))
        }
    }

    func contact(email: String) throws -> Contact? {
        let id = try database.read { db in
            try String.fetchOne(db, sql: "SELECT user_id FROM contact WHERE email_lookup = ?", arguments: [dataKey.lookup(email.lowercased())])
        }
        return try id.flatMap(UUID.init(uuidString:)).flatMap { try contact(id: $0) }
    }

    func keys(of user: UUID, includingRetired: Bool = false) throws -> [KnownKey] {
        try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT identity, first_seen, retired_at FROM contact_key WHERE user_id = ? \(includingRetired ? "" : "AND retired_at IS NULL")
                ORDER BY first_seen
                """, arguments: [user.canonicalString]).map { row in
                KnownKey(identity: try PublicIdentity(serialized: row["identity"] as Data),
                         firstSeen: Date(timeIntervalSince1970: row["first_seen"]),
                         retiredAt: (row["retired_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    /// Records the user's current device keys as the server lists them and returns what changed
    /// since the last time (nothing the first time this profile sees the user).
    func applyCurrentKeys(of user: UUID, _ current: [PublicIdentity], now: Date = Date()) throws -> [KeyChange] {
        let userKey = user.canonicalString
        return try database.write { db in
            let known = try Row.fetchAll(db, sql: "SELECT device_id, fingerprint, identity FROM contact_key WHERE user_id = ? AND retired_at IS NULL",
                                         arguments: [userKey])
            let firstTime = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM contact_key WHERE user_id = ?", arguments: [userKey]) == 0
            let currentFingerprints = Set(current.map { IdentityFingerprint($0).description })
            var knownDevices: [String: String] = [:]
            var changes: [KeyChange] = []
            for row in known {
                let device: String = row["device_id"], fingerprint: String = row["fingerprint"]
                knownDevices[device] = fingerprint
                if !currentFingerprints.contains(fingerprint) {
                    try db.execute(sql: "UPDATE contact_key SET retired_at = ? WHERE user_id = ? AND device_id = ? AND fingerprint = ?",
                                   arguments: [now.timeIntervalSince1970, userKey, device, fingerprint])
                    if !current.contains(where: { $0.deviceID.canonicalString == device }) {
                        changes.append(KeyChange(user: user, deviceID: UUID(uuidString: device) ?? UUID(), kind: .removed, fingerprint: fingerprint))
                    }
                }
            }
            // A session belongs to the key it was started with: a changed or removed key ends it
            // (the tunnel concept); the next message starts a new one.
            for (device, fingerprint) in knownDevices where !currentFingerprints.contains(fingerprint) {
                try db.execute(sql: "DELETE FROM session WHERE user_id = ? AND device_id = ?", arguments: [userKey, device])
            }
            for identity in current {
                let device = identity.deviceID.canonicalString, fingerprint = IdentityFingerprint(identity).description
                guard knownDevices[device] != fingerprint else { continue }
                try db.execute(sql: """
                    INSERT INTO contact_key (user_id, device_id, fingerprint, identity, first_seen, retired_at) VALUES (?, ?, ?, ?, ?, NULL)
                    ON CONFLICT DO UPDATE SET retired_at = NULL
                    """, arguments: [userKey, device, fingerprint, identity.serialized, now.timeIntervalSince1970])
                if !firstTime {
                    changes.append(KeyChange(user: user, deviceID: identity.deviceID, kind: knownDevices[device] == nil ? .added : .replaced,
                                             fingerprint: fingerprint))
                }
            }
            return changes
        }
    }

    func verifiedDigest(of user: UUID) throws -> Data? {
        try database.read { db in
            try Data.fetchOne(db, sql: "SELECT verified_digest FROM contact WHERE user_id = ?", arguments: [user.canonicalString])
        }
    }

    func setVerifiedDigest(_ digest: Data?, of user: UUID) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE contact SET verified_digest = ? WHERE user_id = ?", arguments: [digest, user.canonicalString])
        }
    }

    // MARK: Messages

    /// A message or notice to store; `text` nil with a reason for one that could not be read.
    struct NewMessage {
        var id: UUID
        var peer: UUID
        var direction: ChatMessage.Direction
        var senderDevice: UUID?
        var sentAt: Date
        var text: String?
        var unreadableReason: String?
        var state: String
        /// The envelope version that carried it (received messages).
        var envelopeVersion: Int? = nil
    }

    private func context(_ id: UUID, _ peer: UUID, _ direction: ChatMessage.Direction) -> String {
        "message|\(id.canonicalString)|\(peer.canonicalString)|\(direction.rawValue)"
    }

    /// Stores messages and moves the mailbox cursor in one transaction; a message seen before
    /// (same id, peer and direction) is not stored twice. Returns the messages newly stored.
    /// - Parameters:
    ///   - outbox: also queue the messages for sending; `confirmed` records that the user chose to
    ///     send despite a key change.
    ///   - sessions, prekeys: session states and prekeys as opening the messages left them. They are
    ///     written in the same transaction: a message key is never used up without its message stored.
    @discardableResult
    func insert(_ messages: [NewMessage], cursor: Int64? = nil, outbox: Bool = false, confirmed: Bool = false,
                sessions: [PeerSession] = [], prekeys: DevicePrekeys? = nil) throws -> [ChatMessage] {
        let sealed = try messages.map { message in
            try message.text.map { try dataKey.seal(Data($0.utf8), context: context(message.id, message.peer, message.direction)) }
        }
        let sealedSessions = try sessions.map(sealSession)
        let sealedPrekeys = try prekeys.map(sealPrekeys)
        return try database.write { db in
            try writeSessions(sealedSessions, db)
            if let sealedPrekeys { try writePrekeys(sealedPrekeys, db) }
            var stored: [ChatMessage] = []
            for (message, body) in zip(messages, sealed) {
                try db.execute(sql: """
                    INSERT OR IGNORE INTO message (message_id, peer_id, direction, sender_device, sent_at, body, unreadable_reason, state, is_read, envelope)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [message.id.canonicalString, message.peer.canonicalString, message.direction.rawValue,
                                     message.senderDevice?.canonicalString, message.sentAt.timeIntervalSince1970, body,
                                     message.unreadableReason, message.state, message.direction == .incoming ? 0 : 1, message.envelopeVersion])
                guard db.changesCount > 0 else { continue }
                if outbox {
                    try db.execute(sql: "INSERT INTO outbox (message_id, peer_id, confirmed, created_at) VALUES (?, ?, ?, ?)",
                                   arguments: [message.id.canonicalString, message.peer.canonicalString, confirmed,
                                               Date().timeIntervalSince1970])
                }
                stored.append(ChatMessage(id: message.id, sequence: db.lastInsertedRowID, peer: message.peer, direction: message.direction,
                                          sentAt: message.sentAt, text: message.text, unreadableReason: message.unreadableReason,
                                          status: Self.status(message.state, failure: nil), isRead: message.direction != .incoming,
                                          envelopeVersion: message.envelopeVersion))
            }
            if let cursor {
                try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('cursor', ?)", arguments: [cursor])
            }
            return stored
        }
    }

    private static func status(_ state: String, failure: String?) -> ChatMessage.Status {
        switch state {
        case "pending": return .pending
        case "sent": return .sent
        case "failed": return .failed(failure ?? "unknown reason")
        default: return .received
        }
    }

    private func message(from row: Row) throws -> ChatMessage {
        let id = UUID(uuidString: row["message_id"]) ?? UUID()
        let peer = UUID(uuidString: row["peer_id"]) ?? UUID()
        let direction = ChatMessage.Direction(rawValue: row["direction"]) ?? .notice
        let text = try (row["body"] as Data?).map { String(decoding: try dataKey.open($0, context: context(id, peer, direction)), as: UTF8.self) }
        return ChatMessage(id: id, sequence: row["seq"], peer: peer, direction: direction, sentAt: Date(timeIntervalSince1970: row["sent_at"]),
                           text: text, unreadableReason: row["unreadable_reason"], status: Self.status(row["state"], failure: row["failure"]),
                           isRead: row["is_read"], envelopeVersion: row["envelope"])
    }

    /// The last `limit` lines with `peer`, oldest first.
    func history(with peer: UUID, limit: Int) throws -> [ChatMessage] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM (SELECT * FROM message WHERE peer_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq",
                             arguments: [peer.canonicalString, limit]).map(message(from:))
        }
    }

    func message(id: UUID, direction: ChatMessage.Direction) throws -> ChatMessage? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM message WHERE message_id = ? AND direction = ?",
                             arguments: [id.canonicalString, direction.rawValue]).map(message(from:))
        }
    }

    func markRead(peer: UUID) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE message SET is_read = 1 WHERE peer_id = ? AND is_read = 0", arguments: [peer.canonicalString])
        }
    }

    /// Conversations, most recent first, with unread counts and the last line.
    func conversations() throws -> [ConversationSummary] {
        let rows = try database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT m.*, s.unread, s.last_notice, s.last_outgoing FROM message m
                JOIN (SELECT peer_id, MAX(seq) AS last, SUM(direction = 0 AND is_read = 0) AS unread,
                             MAX(CASE WHEN direction = 2 THEN seq END) AS last_notice,
                             MAX(CASE WHEN direction = 1 THEN seq END) AS last_outgoing
                      FROM message GROUP BY peer_id) s
                  ON m.seq = s.last
                ORDER BY m.sent_at DESC
                """)
        }
        return try rows.compactMap { row in
            let last = try message(from: row)
            guard let peer = try contact(id: last.peer) else { return nil }
            var warning: String?
            if let notice = row["last_notice"] as Int64?, notice > (row["last_outgoing"] as Int64? ?? 0) {
                warning = try database.read { db in try Row.fetchOne(db, sql: "SELECT * FROM message WHERE seq = ?", arguments: [notice]) }
                    .map(message(from:))?.text
            }
            return ConversationSummary(peer: peer, lastActivity: last.sentAt, unread: row["unread"], preview: last.displayText,
                                       keyChangeWarning: warning)
        }
    }

    // MARK: Sessions and prekeys

    private func sessionContext(_ user: String, _ device: String, _ fingerprint: String) -> String {
        "session|\(user)|\(device)|\(fingerprint)"
    }

    private func sealSession(_ session: PeerSession) throws -> (String, String, String, Data) {
        let user = session.user.canonicalString, device = session.device.canonicalString
        return (user, device, session.fingerprint,
                try dataKey.seal(session.record.serialized, context: sessionContext(user, device, session.fingerprint)))
    }

    private func writeSessions(_ sealed: [(String, String, String, Data)], _ db: Database) throws {
        for (user, device, fingerprint, blob) in sealed {
            try db.execute(sql: "INSERT OR REPLACE INTO session (user_id, device_id, fingerprint, sealed, updated_at) VALUES (?, ?, ?, ?, ?)",
                           arguments: [user, device, fingerprint, blob, Date().timeIntervalSince1970])
        }
    }

    private func sealPrekeys(_ prekeys: DevicePrekeys) throws -> Data {
        try dataKey.seal(prekeys.serialized, context: "meta|prekeys")
    }

    private func writePrekeys(_ sealed: Data, _ db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('prekeys', ?)", arguments: [sealed])
    }

    /// The sessions with a peer device, if they were started with the key whose fingerprint is given.
    func session(user: UUID, device: UUID, fingerprint: String) throws -> SessionRecord? {
        let userKey = user.canonicalString, deviceKey = device.canonicalString
        guard let sealed = try database.read({ db in
            try Data.fetchOne(db, sql: "SELECT sealed FROM session WHERE user_id = ? AND device_id = ? AND fingerprint = ?",
                              arguments: [userKey, deviceKey, fingerprint])
        }) else { return nil }
        return try SessionRecord(serialized: dataKey.open(sealed, context: sessionContext(userKey, deviceKey, fingerprint)))
    }

    /// Stores session states (after sealing with them, before the envelopes leave).
    func saveSessions(_ sessions: [PeerSession]) throws {
        let sealed = try sessions.map(sealSession)
        try database.write { db in try writeSessions(sealed, db) }
    }

    /// How many peer devices this profile has sessions with.
    func sessionCount() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM session") ?? 0 }
    }

    /// Forgets every session (this device's own key changed).
    func deleteAllSessions() throws {
        try database.write { db in try db.execute(sql: "DELETE FROM session") }
    }

    func prekeys() throws -> DevicePrekeys? {
        guard let sealed = try database.read({ db in try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'prekeys'") }) else {
            return nil
        }
        return try DevicePrekeys(serialized: dataKey.open(sealed, context: "meta|prekeys"))
    }

    func savePrekeys(_ prekeys: DevicePrekeys) throws {
        let sealed = try sealPrekeys(prekeys)
        try database.write { db in try writePrekeys(sealed, db) }
    }

    // MARK: Outbox

    func outbox() throws -> [(id: UUID, peer: UUID, confirmed: Bool)] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT message_id, peer_id, confirmed FROM outbox ORDER BY created_at").compactMap { row in
                guard let id = UUID(uuidString: row["message_id"]), let peer = UUID(uuidString: row["peer_id"]) else { return nil }
                return (id, peer, row["confirmed"])
            }
        }
    }

    /// Marks an outgoing message sent or failed and takes it out of the outbox.
    func finish(_ id: UUID, failure: String?) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE message SET state = ?, failure = ? WHERE message_id = ? AND direction = 1",
                           arguments: [failure == nil ? "sent" : "failed", failure, id.canonicalString])
            try db.execute(sql: "DELETE FROM outbox WHERE message_id = ?", arguments: [id.canonicalString])
        }
    }

    func countAttempt(_ id: UUID) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE outbox SET attempts = attempts + 1 WHERE message_id = ?", arguments: [id.canonicalString])
        }
    }

    /// Puts a failed message back in the outbox.
    func requeue(_ id: UUID, confirmed: Bool) throws -> Bool {
        try database.write { db in
            guard let peer = try String.fetchOne(db, sql: "SELECT peer_id FROM message WHERE message_id = ? AND direction = 1 AND state = 'failed'",
                                                 arguments: [id.canonicalString]) else { return false }
            try db.execute(sql: "UPDATE message SET state = 'pending', failure = NULL WHERE message_id = ? AND direction = 1",
                           arguments: [id.canonicalString])
            try db.execute(sql: "INSERT OR IGNORE INTO outbox (message_id, peer_id, confirmed, created_at) VALUES (?, ?, ?, ?)",
                           arguments: [id.canonicalString, peer, confirmed, Date().timeIntervalSince1970])
            return true
        }
    }
}

/// A change in a user's device keys, as the server announced it or as a key refresh found it.
public struct KeyChange: Sendable, Hashable {
    public enum Kind: String, Sendable { case added, replaced, removed }
    public let user: UUID
    public let deviceID: UUID
    public let kind: Kind
    public let fingerprint: String

    /// One id per change, so the server's notice and a refresh that finds the same change
    /// store one line.
    var noticeID: UUID {
        let digest = Array(SHA256.hash(data: Data("\(user)|\(deviceID)|\(kind.rawValue)|\(fingerprint)".utf8)))
        var bytes = Array(digest[0..<16])
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
