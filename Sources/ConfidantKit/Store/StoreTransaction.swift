import ConfidantCrypto
import Foundation
import GRDB

/// The protocol stores (`SessionStore`, `PrekeyStore`, `IdentityStore`) over the local store,
/// inside one write transaction (`LocalStore.transaction`). Prekeys are read and decrypted once
/// per transaction and written back at its end.
final class StoreTransaction: SessionStore, PrekeyStore, IdentityStore {
    let db: Database
    private let dataKey: LocalDataKey
    private let parsedPrekeys: ParsedPrekeys
    private let parsedIdentities: ParsedIdentities
    private var prekeys: DevicePrekeys??
    private var prekeysChanged = false

    init(_ db: Database, dataKey: LocalDataKey, parsedPrekeys: ParsedPrekeys, parsedIdentities: ParsedIdentities) {
        self.db = db
        self.dataKey = dataKey
        self.parsedPrekeys = parsedPrekeys
        self.parsedIdentities = parsedIdentities
    }

    // MARK: SessionStore

    func session(with device: DeviceAddress, fingerprint: String) throws -> SessionRecord? {
        guard
            let row =
                try SessionRow
                .filter(
                    SessionRow.Columns.userID == device.userID.canonicalString
                        && SessionRow.Columns.deviceID == device.deviceID.canonicalString
                        && SessionRow.Columns.fingerprint == fingerprint
                )
                .fetchOne(db)
        else { return nil }
        return try SessionRecord(
            serialized: dataKey.open(row.sealed, context: SealContext.session(device, fingerprint: fingerprint).text))
    }

    func storeSession(_ record: SessionRecord, with device: DeviceAddress, fingerprint: String) throws {
        let sealed = try dataKey.seal(
            record.serialized, context: SealContext.session(device, fingerprint: fingerprint).text)
        try SessionRow(
            userID: device.userID, deviceID: device.deviceID, fingerprint: fingerprint, sealed: sealed,
            updatedAt: Date()
        ).save(db)
    }

    /// Ends the sessions with the devices (their keys changed).
    func endSessions(of user: UUID, devices: [UUID]) throws {
        guard !devices.isEmpty else { return }
        try SessionRow.filter(
            SessionRow.Columns.userID == user.canonicalString
                && devices.map(\.canonicalString).contains(SessionRow.Columns.deviceID)
        )
        .deleteAll(db)
    }

    /// Forgets every session (this device's own key changed).
    func endAllSessions() throws {
        try SessionRow.deleteAll(db)
    }

    // MARK: PrekeyStore

    func devicePrekeys() throws -> DevicePrekeys? {
        if let prekeys { return prekeys }
        let stored = try MetaRecord.fetchOne(db, key: MetaRecord.Key.prekeys.rawValue).map { row in
            try parsedPrekeys.prekeys(in: row.value) { [dataKey] sealed in
                try DevicePrekeys(serialized: dataKey.open(sealed, context: SealContext.prekeys.text))
            }
        }
        prekeys = .some(stored)
        return stored
    }

    func storeDevicePrekeys(_ prekeys: DevicePrekeys) throws {
        self.prekeys = .some(prekeys)
        prekeysChanged = true
    }

    /// Writes what changed and was cached; `LocalStore.transaction` calls it before committing.
    func flush() throws {
        guard prekeysChanged, let prekeys = prekeys ?? nil else { return }
        let sealed = try dataKey.seal(prekeys.serialized, context: SealContext.prekeys.text)
        try MetaRecord(key: MetaRecord.Key.prekeys.rawValue, value: sealed).save(db)
        parsedPrekeys.remember(prekeys, sealed: sealed)
        prekeysChanged = false
    }

    // MARK: IdentityStore

    func knownKeys(of device: DeviceAddress) throws -> [KnownKey] {
        try ContactKeyRecord
            .filter(
                ContactKeyRecord.Columns.userID == device.userID.canonicalString
                    && ContactKeyRecord.Columns.deviceID == device.deviceID.canonicalString
            )
            .fetchAll(db)
            // Current first, then retired ones, newest first.
            .sorted { ($0.retiredAt ?? .distantFuture) > ($1.retiredAt ?? .distantFuture) }
            .map {
                KnownKey(
                    identity: try parsedIdentities.identity($0.identity), firstSeen: $0.firstSeen,
                    retiredAt: $0.retiredAt)
            }
    }
}
