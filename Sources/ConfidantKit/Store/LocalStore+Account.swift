import ConfidantCrypto
import Foundation
import GRDB

/// The account (sealed), the mailbox cursor and this device's prekeys.
extension LocalStore {
    func account() throws -> AccountState? {
        try read { db in
            guard let row = try MetaRecord.fetchOne(db, key: MetaRecord.Key.account.rawValue) else { return nil }
            return try JSONDecoder().decode(AccountState.self, from: open(row.value, .account))
        }
    }

    func saveAccount(_ account: AccountState) throws {
        let sealed = try seal(JSONEncoder().encode(account), .account)
        try write { db in try MetaRecord(key: MetaRecord.Key.account.rawValue, value: sealed).save(db) }
    }

    /// The last mailbox cursor stored with its entries (0 before the first).
    func cursor() throws -> Int64 {
        try read { db in try Self.cursor(db) }
    }

    static func cursor(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?"),
            arguments: [MetaRecord.Key.cursor.rawValue]) ?? 0
    }

    /// Sets a `meta` value in place.
    static let setMeta =
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"

    static func setCursor(_ cursor: Int64, _ db: Database) throws {
        // Stored as an integer, as the first version did. An upsert, not `INSERT OR REPLACE`: that
        // deletes the row and inserts it again, which writes the key's index page to the log as
        // well as the row's, for every transaction that receives (read from the log's frames).
        try db.cachedStatement(sql: Self.setMeta).execute(arguments: [MetaRecord.Key.cursor.rawValue, cursor])
    }

    func prekeys() throws -> DevicePrekeys? {
        try transaction { try $0.devicePrekeys() }
    }

    func savePrekeys(_ prekeys: DevicePrekeys) throws {
        try transaction { try $0.storeDevicePrekeys(prekeys) }
    }

    /// How many peer devices this profile has sessions with.
    func sessionCount() throws -> Int {
        try read { db in try SessionRow.fetchCount(db) }
    }
}

extension LocalStore {
    /// The sessions with a peer device, if they were started with the key whose fingerprint is given.
    func session(with device: DeviceAddress, fingerprint: String) throws -> SessionRecord? {
        try transaction { try $0.session(with: device, fingerprint: fingerprint) }
    }
}
