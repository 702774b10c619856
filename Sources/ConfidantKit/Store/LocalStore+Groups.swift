import ConfidantCrypto
import Foundation
import GRDB

/// The groups' signed changes (docs/PROTOCOL.md §10), sealed at rest. A group's state is what
/// its verified changes make (`GroupLedger`); a change whose author's key this device does not
/// know yet waits unverified until the key is fetched.
extension LocalStore {
    /// What receiving a change did.
    enum GroupChangeReception: Equatable {
        /// Verified and stored.
        case stored
        /// Stored before.
        case duplicate
        /// Stored, waiting for the key of its author (this user).
        case awaitingKey(author: UUID)
        /// Malformed, or for another group: dropped.
        case dropped
    }

    /// Takes a change received for `group`: verified with a key this device knows for its author
    /// device (a retired one too: a change made before a key rotation), else kept until the
    /// author's key history is fetched (`verifyWaitingGroupChanges`).
    func receiveGroupChange(
        _ bytes: Data, group: UUID, own: SessionCipher.Recipient, now: Date, _ db: Database
    ) throws -> GroupChangeReception {
        guard let change = try? GroupChange(serialized: bytes), change.groupID == group else { return .dropped }
        let digest = change.digest.description
        if try Bool.fetchOne(
            db, sql: "SELECT 1 FROM group_change WHERE group_id = ? AND digest = ?",
            arguments: [group.canonicalString, Data(change.digest.bytes)]) == true
        {
            return .duplicate
        }
        let verified = try authorKeys(of: change, own: own, db).contains { (try? change.verified(by: $0)) != nil }
        try db.execute(
            sql: """
                INSERT INTO group_change (group_id, digest, sealed, verified, received_at) VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [
                group.canonicalString, Data(change.digest.bytes),
                try seal(bytes, .groupChange(group: group, digest: digest)), verified, now.timeIntervalSince1970,
            ])
        return verified ? .stored : .awaitingKey(author: change.author.userID)
    }

    /// Stores a change this device made (its signature is its own).
    func storeOwnGroupChange(_ change: GroupChange, now: Date, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO group_change (group_id, digest, sealed, verified, received_at)
                VALUES (?, ?, ?, 1, ?)
                """,
            arguments: [
                change.groupID.canonicalString, Data(change.digest.bytes),
                try seal(change.serialized, .groupChange(group: change.groupID, digest: change.digest.description)),
                now.timeIntervalSince1970,
            ])
    }

    /// The group's ledger from its verified changes; nil when this device holds none.
    func groupLedger(_ group: UUID) throws -> GroupLedger? {
        try read { db in try groupLedger(group, db) }
    }

    func groupLedger(_ group: UUID, _ db: Database) throws -> GroupLedger? {
        let rows = try Row.fetchAll(
            db, sql: "SELECT digest, sealed FROM group_change WHERE group_id = ? AND verified = 1",
            arguments: [group.canonicalString])
        guard !rows.isEmpty else { return nil }
        var ledger = GroupLedger(groupID: group)
        for row in rows {
            let digest: Data = row["digest"]
            let bytes = try open(row["sealed"], .groupChange(group: group, digest: digest.hexString))
            do {
                // Verified when it was stored; the sealed row cannot have been changed since.
                ledger.insert(VerifiedGroupChange(change: try GroupChange(serialized: bytes)))
            } catch {
                throw ConfidantKitError.storeDamaged("a stored group change does not decode (\(error))")
            }
        }
        return ledger
    }

    /// Whether `id` is a group this device holds a verified change of (a conversation id that is
    /// not a user's), without building its ledger.
    func holdsGroup(_ id: UUID) throws -> Bool {
        try read { db in try holdsGroup(id, db) }
    }

    func holdsGroup(_ id: UUID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT 1 FROM group_change WHERE group_id = ? AND verified = 1 LIMIT 1",
            arguments: [id.canonicalString]) == true
    }

    /// The groups this device holds changes of.
    func groupIDs() throws -> [UUID] {
        try read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT group_id FROM group_change WHERE verified = 1")
                .compactMap(UUID.init(uuidString:))
        }
    }

    /// Changes waiting for their author's key.
    func unverifiedGroupChanges() throws -> [(group: UUID, change: GroupChange)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT group_id, digest, sealed FROM group_change WHERE verified = 0").compactMap
            {
                row in
                guard let group = UUID(uuidString: row["group_id"]) else { return nil }
                let digest: Data = row["digest"]
                let bytes = try open(row["sealed"], .groupChange(group: group, digest: digest.hexString))
                return (group, try GroupChange(serialized: bytes))
            }
        }
    }

    /// Verifies the waiting changes with the keys this device knows and the key histories
    /// fetched for their authors (`histories`, by user); drops one that no key of a fetched
    /// history checks (forged), and keeps the others waiting.
    /// - Returns: the groups that gained a change.
    func verifyWaitingGroupChanges(
        own: SessionCipher.Recipient, histories: [UUID: [PublicIdentity]]
    ) throws -> Set<UUID> {
        let waiting = try unverifiedGroupChanges()
        guard !waiting.isEmpty else { return [] }
        return try write { db in
            var changed: Set<UUID> = []
            for (group, change) in waiting {
                let fetched = histories[change.author.userID]
                let keys =
                    try authorKeys(of: change, own: own, db)
                    + (fetched ?? []).filter { $0.deviceID == change.author.deviceID }
                let arguments: StatementArguments = [group.canonicalString, Data(change.digest.bytes)]
                if keys.contains(where: { (try? change.verified(by: $0)) != nil }) {
                    try db.execute(
                        sql: "UPDATE group_change SET verified = 1 WHERE group_id = ? AND digest = ?",
                        arguments: arguments)
                    changed.insert(group)
                } else if fetched != nil {
                    try db.execute(
                        sql: "DELETE FROM group_change WHERE group_id = ? AND digest = ?", arguments: arguments)
                }
            }
            return changed
        }
    }

    /// Every key this device knows for the change's author device: its own, or a contact's
    /// (retired ones too; the account's other devices are recorded as contacts' are).
    private func authorKeys(of change: GroupChange, own: SessionCipher.Recipient, _ db: Database) throws
        -> [PublicIdentity]
    {
        if change.author == own.address { return [own.identity] }
        return try ContactKeyRecord.fetchAll(
            db, sql: "SELECT * FROM contact_key WHERE user_id = ?", arguments: [change.author.userID.canonicalString]
        ).map(parsedIdentities.knownKey).map(\.identity).filter { $0.deviceID == change.author.deviceID }
    }
}
