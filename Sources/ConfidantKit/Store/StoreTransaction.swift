import ConfidantCrypto
import Foundation
import GRDB

/// The protocol stores (`SessionStore`, `PrekeyStore`, `IdentityStore`) over the local store,
/// inside one write transaction (`LocalStore.transaction`). Prekeys, sessions and devices' keys
/// are read once per transaction; prekeys and sessions are written back at its end, each once.
final class StoreTransaction: SessionStore, PrekeyStore, IdentityStore {
    let db: Database
    private let dataKey: LocalDataKey
    private let parsedPrekeys: OpenedValues<MetaRecord.Key, DevicePrekeys>
    private let parsedIdentities: ParsedIdentities
    private let openedSessions: OpenedValues<SessionKey, SessionRecord>
    private var prekeys: DevicePrekeys??
    private var prekeysChanged = false
    /// Sessions read or stored in this transaction: sealing asks for a session twice (does it
    /// need a bundle? then seal), and opening each one costs a decryption and a parse.
    private var sessions: [SessionKey: SessionRecord?] = [:]
    /// Sessions stored in this transaction and not written yet, by device (one session each):
    /// written once at its end (``flush()``). A window of messages to one device, or a batch
    /// received from it, stored the device's session once per message, each sealed anew and
    /// written over the last.
    private var unwritten: [DeviceAddress: SessionKey] = [:]
    /// Devices' known keys as read in this transaction (the keys change outside it).
    private var keys: [DeviceAddress: [KnownKey]] = [:]
    /// The system's run this transaction writes in (`LocalStore.boot`).
    private let boot: String?
    /// Whether this transaction commits without a sync: then a session it stores that reserves
    /// message numbers is marked (``reserved``, ``startedChain``).
    private let deferred: Bool
    /// Whether this deferred transaction stored a session whose seals went beyond what its row
    /// reserved: a reservation must be on disk before an envelope numbered under it leaves, and
    /// those envelopes are on their way, so `LocalStore.countedTransaction` syncs the log as it
    /// commits.
    private(set) var reserved = false
    /// Whether this deferred transaction stored a sending chain that a DH ratchet step started,
    /// nothing sealed on it yet (`SessionRecord.NewReservation.newChain`): on disk before anything
    /// sealed on it leaves (`LocalStore.syncBeforeSending`), but the commit need not wait for it.
    private(set) var startedChain = false

    /// A device's session bound to one of its keys.
    struct SessionKey: Hashable, Sendable {
        let device: DeviceAddress
        let fingerprint: String
    }

    init(
        _ db: Database, dataKey: LocalDataKey, parsedPrekeys: OpenedValues<MetaRecord.Key, DevicePrekeys>,
        parsedIdentities: ParsedIdentities,
        openedSessions: OpenedValues<SessionKey, SessionRecord>, boot: String?, deferred: Bool
    ) {
        self.db = db
        self.boot = boot
        self.deferred = deferred
        self.dataKey = dataKey
        self.parsedPrekeys = parsedPrekeys
        self.parsedIdentities = parsedIdentities
        self.openedSessions = openedSessions
    }

    // MARK: SessionStore

    func session(with device: DeviceAddress, fingerprint: String) throws -> SessionRecord? {
        let key = SessionKey(device: device, fingerprint: fingerprint)
        if let known = sessions[key] { return known }
        let record = try readSession(with: device, fingerprint: fingerprint)
        sessions[key] = .some(record)
        return record
    }

    private func readSession(with device: DeviceAddress, fingerprint: String) throws -> SessionRecord? {
        // Cached statements here and below: these run for every message sealed or opened.
        let statement = try db.cachedStatement(
            sql: "SELECT sealed, boot FROM session WHERE user_id = ? AND device_id = ? AND fingerprint = ?")
        guard
            let row = try Row.fetchOne(
                statement,
                arguments: [device.userID.canonicalString, device.deviceID.canonicalString, fingerprint]),
            let sealed = row[0] as Data?
        else { return nil }
        let key = SessionKey(device: device, fingerprint: fingerprint)
        var record = try openedSessions.value(for: key, in: sealed) { [dataKey] sealed in
            try SessionRecord(
                serialized: dataKey.open(sealed, context: SealContext.session(device, fingerprint: fingerprint).text))
        }
        // Written in an earlier run of the system, the row may be older than what was sealed
        // with it (writes not synced are lost with the run): go on past what it reserved.
        if let boot, row[1] as String? != boot { record.skipToReservations() }
        return record
    }

    func storeSession(_ record: SessionRecord, with device: DeviceAddress, fingerprint: String) throws {
        let key = SessionKey(device: device, fingerprint: fingerprint)
        if deferred, !reserved {
            switch try record.newReservation(beyond: session(with: device, fingerprint: fingerprint)) {
            case .none: break
            case .extended: reserved = true
            case .newChain: startedChain = true
            }
        }
        // One session per device: a session bound to another key is replaced, here and in the row.
        if sessions.keys.contains(where: { $0.device == device && $0 != key }) {
            sessions = sessions.filter { $0.key.device != device }
        }
        sessions[key] = .some(record)
        unwritten[device] = key
    }

    /// Writes a session stored in this transaction to its row.
    private func write(_ key: SessionKey) throws {
        guard let record = sessions[key] ?? nil else { return }
        let device = key.device
        let fingerprint = key.fingerprint
        let sealed = try dataKey.seal(
            record.serialized, context: SealContext.session(device, fingerprint: fingerprint).text)
        openedSessions.remember(record, for: key, sealed: sealed)
        try db.cachedStatement(
            sql: """
                INSERT INTO session (user_id, device_id, fingerprint, sealed, updated_at, boot) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id, device_id) DO UPDATE SET
                    fingerprint = excluded.fingerprint, sealed = excluded.sealed, updated_at = excluded.updated_at,
                    boot = excluded.boot
                """
        ).execute(arguments: [
            device.userID.canonicalString, device.deviceID.canonicalString, fingerprint, sealed,
            Date().timeIntervalSince1970, boot,
        ])
    }

    /// Ends the sessions with the devices (their keys changed).
    func endSessions(of user: UUID, devices: [UUID]) throws {
        guard !devices.isEmpty else { return }
        sessions = sessions.filter { !($0.key.device.userID == user && devices.contains($0.key.device.deviceID)) }
        unwritten = unwritten.filter { !($0.key.userID == user && devices.contains($0.key.deviceID)) }
        try SessionRow.filter(
            SessionRow.Columns.userID == user.canonicalString
                && devices.map(\.canonicalString).contains(SessionRow.Columns.deviceID)
        )
        .deleteAll(db)
    }

    /// Forgets every session (this device's own key changed).
    func endAllSessions() throws {
        sessions = [:]
        unwritten = [:]
        try SessionRow.deleteAll(db)
    }

    // MARK: PrekeyStore

    func devicePrekeys() throws -> DevicePrekeys? {
        if let prekeys { return prekeys }
        let stored = try Data.fetchOne(
            db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"),
            arguments: [MetaRecord.Key.prekeys.rawValue]
        ).map { value in
            try parsedPrekeys.value(for: .prekeys, in: value) { [dataKey] sealed in
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
        for key in unwritten.values { try write(key) }
        unwritten = [:]
        guard prekeysChanged, let prekeys = prekeys ?? nil else { return }
        let sealed = try dataKey.seal(prekeys.serialized, context: SealContext.prekeys.text)
        try MetaRecord(key: MetaRecord.Key.prekeys.rawValue, value: sealed).save(db)
        parsedPrekeys.remember(prekeys, for: .prekeys, sealed: sealed)
        prekeysChanged = false
    }

    // MARK: IdentityStore

    /// The three columns a key needs, read by position from the statement's row, rather than the
    /// whole record decoded by name (its ids parsed from text, which `knownKey` does not use).
    func knownKeys(of device: DeviceAddress) throws -> [KnownKey] {
        if let known = keys[device] { return known }
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: "SELECT identity, first_seen, retired_at FROM contact_key WHERE user_id = ? AND device_id = ?"),
            arguments: [device.userID.canonicalString, device.deviceID.canonicalString])
        var known: [KnownKey] = []
        while let row = try rows.next() {
            let identity: Data = try row.decode(atIndex: 0)
            let firstSeen: Double = try row.decode(atIndex: 1)
            let retiredAt: Double? = try row.decode(atIndex: 2)
            known.append(
                try parsedIdentities.knownKey(
                    identity: identity, firstSeen: Date(timeIntervalSince1970: firstSeen),
                    retiredAt: retiredAt.map(Date.init(timeIntervalSince1970:))))
        }
        // Current first, then retired ones, newest first.
        known.sort { ($0.retiredAt ?? .distantFuture) > ($1.retiredAt ?? .distantFuture) }
        keys[device] = known
        return known
    }
}
