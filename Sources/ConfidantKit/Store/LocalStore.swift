import ConfidantCrypto
import Foundation
import GRDB

/// The profile's SQLite database (GRDB): account, contacts and their keys, conversations,
/// messages, the outbox, sessions and prekeys. Message bodies, notices, contact names and
/// e-mails, sessions, prekeys and the account (with its token) are sealed under the
/// ``LocalDataKey``; ids, times, states and public keys are not.
final class LocalStore: Sendable {
    let database: DatabaseQueue
    let dataKey: LocalDataKey
    /// Where the encrypted attachment files are (`attachments/` beside the database, 0700).
    let attachmentsDirectory: URL
    private let parsedPrekeys = ParsedPrekeys()
    let parsedIdentities = ParsedIdentities()

    private init(database: DatabaseQueue, dataKey: LocalDataKey, attachmentsDirectory: URL) {
        self.database = database
        self.dataKey = dataKey
        self.attachmentsDirectory = attachmentsDirectory
    }

    /// Opens the store at `url`, creating it (with a new data key) when it does not exist.
    static func open(at url: URL, identity: PrivateIdentity) throws -> LocalStore {
        var configuration = Configuration()
        // Another process on the same profile (`chat` open while `send` runs) takes its turn:
        // write transactions are IMMEDIATE, so one seals and stores a session at a time, and the
        // other waits for it instead of failing with "database is locked".
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            // WAL: one fsync per transaction instead of several (synchronous stays FULL, so a
            // message acknowledged to the server survives a power loss once stored).
            try db.execute(sql: "PRAGMA journal_mode = WAL")
        }
        let database = try DatabaseQueue(path: url.path, configuration: configuration)
        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        try LocalStoreSchema.migrator.migrate(database)
        let dataKey = try database.write { db -> LocalDataKey in
            if let wrapped = try MetaRecord.fetchOne(db, key: MetaRecord.Key.dataKey.rawValue) {
                return try LocalDataKey.unwrap(wrapped.value, with: identity)
            }
            let key = LocalDataKey.generate()
            try MetaRecord(key: MetaRecord.Key.dataKey.rawValue, value: key.wrapped(for: identity)).insert(db)
            return key
        }
        return LocalStore(
            database: database, dataKey: dataKey,
            attachmentsDirectory: url.deletingLastPathComponent().appendingPathComponent("attachments"))
    }

    /// Rewraps the data key for a new device key (nothing else is re-encrypted).
    func rewrap(for identity: PrivateIdentity) throws {
        let wrapped = try dataKey.wrapped(for: identity)
        try database.write { db in try MetaRecord(key: MetaRecord.Key.dataKey.rawValue, value: wrapped).save(db) }
    }

    /// One read transaction (DEFERRED): everything `body` reads comes from one snapshot, even
    /// when another process on the profile writes meanwhile.
    ///
    /// Not `DatabaseQueue.read`: that brackets each read with `PRAGMA query_only = 1` and `= 0`,
    /// and SQLite expires every prepared statement of the connection after a flag pragma. Every
    /// cached statement of the message path was then compiled again after each read, which was a
    /// quarter of a client's CPU per message. The closures given here only read; the store's
    /// writes go through ``write(_:)`` and ``transaction(_:)``.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try database.unsafeRead { db in
            var result: T?
            try db.inTransaction(.deferred) {
                result = try body(db)
                return .commit
            }
            guard let result else { throw DatabaseError(resultCode: .SQLITE_INTERNAL, message: "read ended early") }
            return result
        }
    }

    /// One write transaction; everything `body` writes commits together or not at all.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try database.write(body)
    }

    /// One write transaction with the protocol stores bound to it (`StoreTransaction`): sessions
    /// and prekeys the protocol changes commit with whatever else `body` writes.
    func transaction<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        try database.write { db in
            let transaction = StoreTransaction(
                db, dataKey: dataKey, parsedPrekeys: parsedPrekeys, parsedIdentities: parsedIdentities)
            let result = try body(transaction)
            try transaction.flush()
            return result
        }
    }

    // MARK: Sealed values

    func seal(_ plaintext: Data, _ context: SealContext) throws -> Data {
        try dataKey.seal(plaintext, context: context.text)
    }

    func open(_ sealed: Data, _ context: SealContext) throws -> Data {
        try dataKey.open(sealed, context: context.text)
    }
}

/// What a sealed value is: its table, column and row, bound as associated data so that a sealed
/// value moved to another row or column does not open (docs/PROTOCOL.md §8).
enum SealContext {
    case account, prekeys
    case contact(UUID)
    case message(id: UUID, peer: UUID, direction: ChatMessage.Direction)
    case attachment(id: UUID, message: UUID)
    case control(UUID)
    case session(DeviceAddress, fingerprint: String)

    var text: String {
        switch self {
        case .account: "meta|account"
        case .prekeys: "meta|prekeys"
        case .contact(let id): "contact|\(id.canonicalString)"
        case .message(let id, let peer, let direction):
            "message|\(id.canonicalString)|\(peer.canonicalString)|\(direction.rawValue)"
        case .attachment(let id, let message): "attachment|\(id.canonicalString)|\(message.canonicalString)"
        case .control(let id): "control|\(id.canonicalString)"
        case .session(let device, let fingerprint):
            "session|\(device.userID.canonicalString)|\(device.deviceID.canonicalString)|\(fingerprint)"
        }
    }
}
