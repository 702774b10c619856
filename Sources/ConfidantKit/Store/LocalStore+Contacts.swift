import ConfidantCrypto
import Foundation
import GRDB

/// Contacts (sealed), the device keys seen for each user, and what the user verified.
extension LocalStore {
    func saveContact(_ contact: Contact) throws {
        // Every send saves its contact, nearly always unchanged, and a synced write transaction
        // is a sync to disk: a read first is cheaper.
        if try self.contact(id: contact.id) == contact { return }
        try replaceContact(contact)
    }

    /// Writes the contact as it is given, keeping what the user verified of its keys.
    func replaceContact(_ contact: Contact) throws {
        let record = try contactRecord(contact)
        try write { db in try Self.save(record, db) }
    }

    /// What sending to `peer` needs from the store: the contact as stored, what the user verified
    /// of its keys (`KeyDirectory.keysChanged`), and the conversation's disappearing timer, as
    /// last read (``SendingContexts``) or, when none is kept or `fresh`, in one read. The
    /// transaction that queues the message checks it is still current (`queue`, `queueSealed`).
    func sendingContext(for peer: UUID, fresh: Bool = false) throws -> SendingContext {
        if !fresh, let known = sendingContexts.cached(peer) { return known }
        let context = try read { db in
            let record = try contactRecord(id: peer, db)
            return SendingContext(
                contact: try record.map(contact), verifiedDigest: record?.verifiedDigest,
                timer: try timer(for: peer, db), stamp: try sendingContexts.stamp(db))
        }
        sendingContexts.remember(context, for: peer)
        return context
    }

    func contactRecord(_ contact: Contact) throws -> ContactRecord {
        ContactRecord(
            userID: contact.id, emailLookup: dataKey.lookup(contact.email.lowercased()),
            sealed: try seal(JSONEncoder().encode(contact), .contact(contact.id)), verifiedDigest: nil)
    }

    /// Inserts or updates the contact, keeping what the user verified.
    static func save(_ record: ContactRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO contact (user_id, email_lookup, sealed) VALUES (?, ?, ?)
                ON CONFLICT (user_id) DO UPDATE SET email_lookup = excluded.email_lookup, sealed = excluded.sealed
                """, arguments: [record.userID.canonicalString, record.emailLookup, record.sealed])
    }

    func contact(id: UUID) throws -> Contact? {
        try read { db in try contacts([id], db)[id] }
    }

    func contact(email: String) throws -> Contact? {
        try read { db in
            guard
                let record = try ContactRecord.filter(
                    ContactRecord.Columns.emailLookup == dataKey.lookup(email.lowercased())
                ).fetchOne(db)
            else { return nil }
            return try contact(record)
        }
    }

    /// The contacts among `ids` that this profile knows, in one query.
    func contacts(_ ids: some Collection<UUID>, _ db: Database) throws -> [UUID: Contact] {
        guard !ids.isEmpty else { return [:] }
        // One contact, the usual ask, by the statement prepared once.
        let records =
            if ids.count == 1, let id = ids.first {
                try contactRecord(id: id, db).map { [$0] } ?? []
            } else {
                try ContactRecord.filter(ids.map(\.canonicalString).contains(ContactRecord.Columns.userID)).fetchAll(db)
            }
        return Dictionary(try records.map { ($0.userID, try contact($0)) }, uniquingKeysWith: { first, _ in first })
    }

    /// One contact's row, by a statement prepared once.
    private func contactRecord(id: UUID, _ db: Database) throws -> ContactRecord? {
        try ContactRecord.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM contact WHERE user_id = ?"), arguments: [id.canonicalString])
    }

    /// Whether this profile knows the user, without opening the contact.
    static func knowsContact(_ id: UUID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM contact WHERE user_id = ?"), arguments: [id.canonicalString])
            ?? false
    }

    /// Whether a key of the user's device is stored, current or retired, without parsing it.
    static func hasKey(of user: UUID, device: UUID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM contact_key WHERE user_id = ? AND device_id = ? LIMIT 1"),
            arguments: [user.canonicalString, device.canonicalString]) ?? false
    }

    private func contact(_ record: ContactRecord) throws -> Contact {
        try openedContacts.value(for: record.userID, in: record.sealed) { sealed in
            try JSONDecoder().decode(Contact.self, from: open(sealed, .contact(record.userID)))
        }
    }

    /// The user's device keys, oldest first; retired ones only when asked.
    func keys(of user: UUID, includingRetired: Bool = false) throws -> [KnownKey] {
        try read { db in
            let statement =
                includingRetired
                ? try db.cachedStatement(sql: "SELECT * FROM contact_key WHERE user_id = ? ORDER BY first_seen")
                : try db.cachedStatement(
                    sql: "SELECT * FROM contact_key WHERE user_id = ? AND retired_at IS NULL ORDER BY first_seen")
            return try ContactKeyRecord.fetchAll(statement, arguments: [user.canonicalString]).map(
                parsedIdentities.knownKey)
        }
    }

    /// Records the user's current device keys as the server lists them (see `KeyUpdate`) and
    /// returns what changed since the last time. Keys no longer listed are retired at the time
    /// `retiredAt` gives for their fingerprint (the relay's), or `now`.
    static func applyCurrentKeys(
        of user: UUID, _ current: [PublicIdentity], now: Date, retiredAt: [String: Date] = [:],
        in transaction: StoreTransaction
    ) throws -> [KeyChange] {
        let db = transaction.db
        let rows = try ContactKeyRecord.filter(ContactKeyRecord.Columns.userID == user.canonicalString).fetchAll(db)
        let update = KeyUpdate(
            user: user,
            known: rows.filter { $0.retiredAt == nil }.map {
                .init(deviceID: $0.deviceID, fingerprint: $0.fingerprint)
            },
            seenBefore: !rows.isEmpty, current: current)
        for key in update.retire {
            try db.execute(
                sql: "UPDATE contact_key SET retired_at = ? WHERE user_id = ? AND device_id = ? AND fingerprint = ?",
                arguments: [
                    (retiredAt[key.fingerprint] ?? now).timeIntervalSince1970, user.canonicalString,
                    key.deviceID.canonicalString, key.fingerprint,
                ])
        }
        try transaction.endSessions(of: user, devices: update.endSessions)
        for identity in update.add {
            // A key that comes back (a device re-registered an earlier key) is current again.
            try db.execute(
                sql: """
                    INSERT INTO contact_key (user_id, device_id, fingerprint, identity, first_seen, retired_at) VALUES (?, ?, ?, ?, ?, NULL)
                    ON CONFLICT DO UPDATE SET retired_at = NULL
                    """,
                arguments: [
                    user.canonicalString, identity.deviceID.canonicalString, IdentityFingerprint(identity).description,
                    identity.serialized, now.timeIntervalSince1970,
                ])
        }
        return update.changes
    }

    func verifiedDigest(of user: UUID) throws -> Data? {
        try read { db in
            try Data.fetchOne(
                db.cachedStatement(sql: "SELECT verified_digest FROM contact WHERE user_id = ?"),
                arguments: [user.canonicalString])
        }
    }

    func setVerifiedDigest(_ digest: Data?, of user: UUID) throws {
        _ = try write { db in
            try ContactRecord.filter(ContactRecord.Columns.userID == user.canonicalString)
                .updateAll(db, ContactRecord.Columns.verifiedDigest.set(to: digest))
        }
    }
}
