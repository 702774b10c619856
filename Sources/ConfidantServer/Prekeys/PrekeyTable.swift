import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// The relay's prekey table in SQL (docs/PROTOCOL.md §9.3): the current signed X25519 and X-Wing
/// prekey of each device, and its unused one-time prekeys.
enum PrekeyTable {
    static let name = "prekeys"

    /// Column names, for the migration and the SQL below.
    enum Column {
        static let id = "id"
        static let userID = "user_id"
        static let deviceID = "device_id"
        static let kind = "kind"
        static let keyID = "key_id"
        static let publicKey = "public_key"
        static let signature = "signature"
        static let createdAt = "created_at"
    }

    enum Kind: String {
        case signed
        case kem
        case oneTime = "one-time"
    }

    struct Key: Sendable {
        let id: Int64
        let publicKey: Data
        let signature: Data?
    }

    /// Replaces the signed prekeys and adds one-time prekeys (ids already present are kept as they are).
    static func store(
        signed: Key, kem: Key, oneTime: [Key], for address: DeviceAddress, capacity: Int, now: Date,
        on db: any Database
    ) async throws {
        let sql = try RelayDatabase.sql(db)
        let existing = try await oneTimeCount(of: address, on: db)
        guard existing + oneTime.count <= capacity else {
            throw APIFailure(
                .tooManyPrekeys,
                "The device already has \(existing) one-time prekeys here; at most \(capacity) are kept. Upload fewer.")
        }
        try await sql.delete(from: name)
            .where(Column.userID, .equal, address.userID).where(Column.deviceID, .equal, address.deviceID)
            .where(Column.kind, .in, [Kind.signed.rawValue, Kind.kem.rawValue])
            .run()
        var insert = sql.insert(into: name)
            .columns(
                Column.userID, Column.deviceID, Column.kind, Column.keyID, Column.publicKey, Column.signature,
                Column.createdAt
            )
            .ignoringConflicts()
        for (kind, key) in [(Kind.signed, signed), (.kem, kem)] + oneTime.map({ (Kind.oneTime, $0) }) {
            insert = insert.values(
                SQLBind(address.userID), SQLBind(address.deviceID), SQLBind(kind.rawValue), SQLBind(key.id),
                SQLBind(key.publicKey), SQLBind(key.signature), SQLBind(now))
        }
        try await insert.run()
        try await sql.update(DeviceRecord.schema)
            .set(DeviceRecord.Column.prekeysLowNoticedAt, to: SQLLiteral.null)
            .where(Column.userID, .equal, address.userID).where(Column.deviceID, .equal, address.deviceID)
            .run()
    }

    /// The device's current signed prekeys, if it published any.
    static func signed(of address: DeviceAddress, on db: any Database) async throws -> (signed: Key, kem: Key)? {
        let rows = try await RelayDatabase.sql(db).select()
            .columns(Column.kind, Column.keyID, Column.publicKey, Column.signature)
            .from(name)
            .where(Column.userID, .equal, address.userID).where(Column.deviceID, .equal, address.deviceID)
            .where(Column.kind, .in, [Kind.signed.rawValue, Kind.kem.rawValue])
            .all()
        var keys: [String: Key] = [:]
        for row in rows {
            keys[try row.decode(column: Column.kind, as: String.self)] = Key(
                id: try row.decode(column: Column.keyID, as: Int64.self),
                publicKey: try row.decode(column: Column.publicKey, as: Data.self),
                signature: try row.decode(column: Column.signature, as: Data?.self))
        }
        guard let signed = keys[Kind.signed.rawValue], let kem = keys[Kind.kem.rawValue] else { return nil }
        return (signed, kem)
    }

    /// Removes and returns the device's oldest one-time prekey. One statement, so a key is handed
    /// out at most once: SQLite runs one writer at a time, and on PostgreSQL concurrent claims skip
    /// the row another transaction has locked instead of both reading it.
    static func claimOneTime(from address: DeviceAddress, postgres: Bool, on db: any Database) async throws -> Key? {
        let lock: SQLQueryString = postgres ? " FOR UPDATE SKIP LOCKED" : ""
        let row = try await RelayDatabase.sql(db).raw(
            """
            DELETE FROM \(ident: name) WHERE \(ident: Column.id) = (SELECT \(ident: Column.id) FROM \(ident: name)
              WHERE \(ident: Column.userID) = \(bind: address.userID) AND \(ident: Column.deviceID) = \(bind: address.deviceID)
              AND \(ident: Column.kind) = \(bind: Kind.oneTime.rawValue) ORDER BY \(ident: Column.id) LIMIT 1\(lock))
            RETURNING \(ident: Column.keyID), \(ident: Column.publicKey)
            """
        ).first()
        guard let row else { return nil }
        return Key(
            id: try row.decode(column: Column.keyID, as: Int64.self),
            publicKey: try row.decode(column: Column.publicKey, as: Data.self),
            signature: nil)
    }

    static func oneTimeCount(of address: DeviceAddress, on db: any Database) async throws -> Int {
        let row = try await RelayDatabase.sql(db).select()
            .column(SQLFunction("COUNT", args: SQLLiteral.all), as: "count")
            .from(name)
            .where(Column.userID, .equal, address.userID).where(Column.deviceID, .equal, address.deviceID)
            .where(Column.kind, .equal, Kind.oneTime.rawValue)
            .first()
        return try row?.decode(column: "count", as: Int.self) ?? 0
    }

    /// Records that the device was told it runs low; false if a concurrent claim already did (on
    /// PostgreSQL the second update waits for the first and then matches no row).
    static func markLowNoticed(_ deviceRow: UUID, at now: Date, on db: any Database) async throws -> Bool {
        try await RelayDatabase.sql(db).update(DeviceRecord.schema)
            .set(DeviceRecord.Column.prekeysLowNoticedAt, to: now)
            .where(Column.id, .equal, deviceRow)
            .where(DeviceRecord.Column.prekeysLowNoticedAt, .is, SQLLiteral.null)
            .returning(Column.id)
            .all()
            .count == 1
    }

    /// Forgets every prekey of a device (its key changed or it was removed).
    static func discard(_ address: DeviceAddress, on db: any Database) async throws {
        try await RelayDatabase.sql(db).delete(from: name)
            .where(Column.userID, .equal, address.userID).where(Column.deviceID, .equal, address.deviceID)
            .run()
    }
}
