import ConfidantCrypto
import Foundation
import GRDB
import Synchronization

/// The profile's SQLite database (GRDB): account, contacts and their keys, conversations,
/// messages, the outbox, sessions and prekeys. Message bodies, notices, contact names and
/// e-mails, sessions, prekeys and the account (with its token) are sealed under the
/// ``LocalDataKey``; ids, times, states and public keys are not.
final class LocalStore: Sendable {
    let database: DatabaseQueue
    let dataKey: LocalDataKey
    /// Where the encrypted attachment files are (`attachments/` beside the database, 0700).
    let attachmentsDirectory: URL

    // MARK: In memory beside the database (`Caches/`): values as last read or written, each
    // answered only while the database still holds what it came from (see each type).

    /// The device's prekeys as last read or written: parsing them makes every private key again,
    /// which derives its public half (a scalar multiplication for each of 100 and more one-time
    /// prekeys), and every received message's transaction reads them.
    private let parsedPrekeys = OpenedValues<MetaRecord.Key, DevicePrekeys>(maximumCount: 1)
    /// Device keys, parsed once (each parse checks a signature).
    let parsedIdentities = ParsedIdentities()
    /// Sessions and contacts as last opened, by their sealed bytes.
    private let openedSessions = OpenedValues<StoreTransaction.SessionKey, SessionRecord>(maximumCount: 1_024)
    let openedContacts = OpenedValues<UUID, Contact>(maximumCount: 4_096)
    /// Senders (and their devices' keys) this store knows, once seen.
    let knownSenders = KnownSenders()
    /// Each peer's context for sending, as last read (`sendingContext(for:)`).
    let sendingContexts = SendingContexts()
    /// What the write under way inserted, for the chats that follow the store (`ChatLines`).
    let insertedLines = InsertedLines()
    /// Whether the control queue may hold something (``takeControlsMark()``).
    let controlsMark = Atomic<Bool>(true)

    // MARK: Durability (`Durability/`, `LocalStore+Durability.swift`)

    /// The run of the system this store writes in (`SystemBoot`), written beside each session:
    /// a session read from a row of another run may have lost its latest writes.
    let boot: String?
    /// The store's write-ahead log, synced without the connection (``syncLog(through:)``); nil
    /// when the store is not in WAL mode, where every commit syncs.
    let log: WriteAheadLog?
    /// Where the log is synced, one sync at a time.
    let logSyncs = DispatchQueue(label: "confidant.store.log-sync", qos: .userInitiated)

    /// The log's checkpoints, after the commits that call for them rather than inside them (WAL
    /// mode only).
    let checkpoints: LogCheckpoints

    /// Whether a commit that makes a DH ratchet step starts a sync of the log at once in the
    /// background (false only in tests: then the step is synced before something sealed after
    /// it leaves, and no sooner).
    let syncsStepsInBackground: Bool

    /// Commits made through this store, counted, and the last one synced: a deferred commit is
    /// on disk once a synced one follows it.
    let commits = Mutex<(count: UInt64, synced: UInt64)>((0, 0))
    /// Where the store's commits stand: how many it made, and the last one on disk.
    var commitCounts: (count: UInt64, synced: UInt64) { commits.withLock { $0 } }

    /// Whether a background sync is scheduled and has not started.
    let backgroundSync = Mutex(false)

    /// What other connections to the profile (another process) committed, and this store's DH
    /// ratchet steps, for the sessions this process seals with: see ``syncBeforeSending()``.
    let sendingSyncPoint = SendingSyncPoint()

    /// Where what the store did is recorded, for whoever passed one in.
    let diagnostics: DeliveryDiagnostics?

    private init(
        database: DatabaseQueue, dataKey: LocalDataKey, attachmentsDirectory: URL, boot: String?, log: WriteAheadLog?,
        checkpoints: LogCheckpoints, syncsStepsInBackground: Bool, diagnostics: DeliveryDiagnostics?
    ) {
        self.diagnostics = diagnostics
        self.checkpoints = checkpoints
        self.database = database
        self.dataKey = dataKey
        self.attachmentsDirectory = attachmentsDirectory
        self.boot = boot
        self.log = log
        self.syncsStepsInBackground = syncsStepsInBackground
    }

    /// Opens the store at `url`, creating it (with a new data key) when it does not exist.
    /// - Parameters:
    ///   - boot: the system's run (`SystemBoot.current`; tests give their own).
    ///   - syncsStepsInBackground: see ``syncsStepsInBackground``.
    ///   - diagnostics: where the store records what it did, if anyone reads it.
    static func open(
        at url: URL, identity: PrivateIdentity, boot: String? = SystemBoot.current, syncsStepsInBackground: Bool = true,
        diagnostics: DeliveryDiagnostics? = nil
    ) throws -> LocalStore {
        var configuration = Configuration()
        // Another process on the same profile (`chat` open while `send` runs) takes its turn:
        // write transactions are IMMEDIATE, so one seals and stores a session at a time, and the
        // other waits for it instead of failing with "database is locked".
        configuration.busyMode = .timeout(10)
        let journal = Mutex<String?>(nil)
        let checkpoints = LogCheckpoints()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            // WAL: one fsync per transaction instead of several. SQLite's commits do not sync the
            // log (NORMAL); a `.synced` write syncs the log's file itself once it has committed
            // (`WriteAheadLog`), so a message acknowledged to the server survives a power loss once
            // stored (rather than switching the connection between FULL and NORMAL around each deferred
            // write, two more statements per transaction). Where the log cannot be used (a file system without shared
            // memory), every commit syncs (FULL).
            let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")?.lowercased()
            journal.withLock { $0 = mode }
            try db.execute(sql: mode == "wal" ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL")
            if mode == "wal" { checkpoints.install(on: db) }
        }
        let database = try DatabaseQueue(path: url.path, configuration: configuration)
        checkpoints.attach(to: database)
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
        let log = journal.withLock { $0 } == "wal" ? WriteAheadLog(path: url.path + "-wal") : nil
        // The migrations and the data key were written at NORMAL: on disk before the store is
        // used, as every synced write is. No other thread has the log yet.
        _ = try log?.sync()
        let store = LocalStore(
            database: database, dataKey: dataKey,
            attachmentsDirectory: url.deletingLastPathComponent().appendingPathComponent("attachments"), boot: boot,
            log: log, checkpoints: checkpoints, syncsStepsInBackground: syncsStepsInBackground,
            diagnostics: diagnostics)
        try database.writeWithoutTransaction { db in try store.sendingContexts.install(on: db) }
        try store.nameAttachmentFilesByScope()
        return store
    }

    /// Rewraps the data key for a new device key (nothing else is re-encrypted), synced: the
    /// key wrapped for the old device key alone would leave the store unreadable.
    func rewrap(for identity: PrivateIdentity) throws {
        let wrapped = try dataKey.wrapped(for: identity)
        try write(.synced) { db in try MetaRecord(key: MetaRecord.Key.dataKey.rawValue, value: wrapped).save(db) }
    }

    /// One read transaction (DEFERRED): everything `body` reads comes from one snapshot, even
    /// when another process on the profile writes meanwhile.
    ///
    /// Not `DatabaseQueue.read`: that brackets each read with `PRAGMA query_only = 1` and `= 0`,
    /// and SQLite expires every prepared statement of the connection after a flag pragma. Every
    /// cached statement of the message path was then compiled again after each read, which was a
    /// quarter of a client's CPU per message. The closures given here only read; the store's
    /// writes go through ``write(_:_:)`` and ``transaction(_:_:)``.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try database.unsafeRead { db in try Self.inTransaction(db, begin: "BEGIN DEFERRED TRANSACTION", body) }
    }

    /// When a write transaction is on disk.
    enum Durability {
        /// Synced before the write returns (the log's file synced after the commit, as SQLite's
        /// `synchronous = FULL` does in WAL mode): what the relay is told next, or what goes on
        /// the wire next, rests on it.
        case synced
        /// In the write-ahead log, and synced with the next synced transaction (which syncs the
        /// whole log): a crash of the process loses nothing, a power cut may lose it. Only for
        /// bookkeeping whose loss repeats work the relay deduplicates — a message marked sent, a
        /// receipt taken off the queue — and so is sent again under the same id and answered as
        /// a duplicate; or for a write whose caller makes sure of it with ``sync(through:)``
        /// before it answers, or ``syncLogSoon(through:)`` once the relay holds it (a new
        /// message; received entries, synced before they are acknowledged to the relay). A
        /// transaction of the protocol stores that stores a session whose seals went beyond its
        /// reservation (`SessionRecord.newReservation(beyond:)`) is synced as it commits, as a
        /// synced one is: its envelopes may leave at once. One that stores a sending chain a DH
        /// ratchet step started is synced at once in the background, and before anything sealed
        /// after it leaves (``syncBeforeSending()``).
        case deferred
    }

    /// How a transaction that seals messages commits: deferred, its envelopes free to leave at
    /// once, when the sessions reserve their message numbers ahead and this store can tell a
    /// session that may have lost writes (it knows the system's run); synced otherwise.
    var sealing: Durability { boot == nil ? .synced : .deferred }

    /// One write transaction; everything `body` writes commits together or not at all.
    func write<T>(_ durability: Durability = .synced, _ body: (Database) throws -> T) throws -> T {
        try countedWrite(durability, body).result
    }

    /// ``write(_:_:)``, with the number of its commit for ``sync(through:)``.
    func countedWrite<T>(_ durability: Durability, _ body: (Database) throws -> T) throws -> (
        result: T, commit: UInt64
    ) {
        try countedWrite(durability, body, afterCommit: { _ in })
    }

    /// ``countedWrite(_:_:)``, with `afterCommit` called with the commit's number while the
    /// connection is still held: before anything else of this process can read or write.
    private func countedWrite<T>(
        _ durability: Durability, _ body: (Database) throws -> T, afterCommit: (UInt64) -> Void
    ) throws -> (result: T, commit: UInt64) {
        let (result, commit, wrote) = try database.writeWithoutTransaction { db in
            let changesBefore = db.totalChangesCount
            // Its inserts are for the chats that follow this commit, not for the next one.
            defer { insertedLines.forget() }
            let result = try Self.inTransaction(db, begin: "BEGIN IMMEDIATE TRANSACTION", body)
            let commit = commits.withLock { commits in
                commits.count += 1
                // Outside WAL mode every commit is synced by SQLite.
                if log == nil { commits.synced = commits.count }
                return commits.count
            }
            afterCommit(commit)
            return (result, commit, db.totalChangesCount != changesBefore)
        }
        // A transaction that changed nothing wrote nothing to the log, so it has nothing to sync.
        // Synced after the connection is free: reads and writes go on meanwhile.
        if durability == .synced, wrote, log != nil {
            try logSyncs.sync { try syncLogNow(through: commit) }
        }
        return (result, commit)
    }

    /// One write transaction with the protocol stores bound to it (`StoreTransaction`): sessions
    /// and prekeys the protocol changes commit with whatever else `body` writes.
    func transaction<T>(_ durability: Durability = .synced, _ body: (StoreTransaction) throws -> T) throws -> T {
        try countedTransaction(durability, body).result
    }

    /// ``transaction(_:_:)``, with the number of its commit for ``sync(through:)``.
    func countedTransaction<T>(_ durability: Durability, _ body: (StoreTransaction) throws -> T) throws -> (
        result: T, commit: UInt64
    ) {
        var seenVersion: Int64?
        var reserved = false
        var startedChain = false
        let (result, commit) = try countedWrite(
            durability,
            { db in
                seenVersion = try sendingSyncPoint.versionIfChanged(db)
                let transaction = StoreTransaction(
                    db, dataKey: dataKey, parsedPrekeys: parsedPrekeys, parsedIdentities: parsedIdentities,
                    openedSessions: openedSessions, boot: boot, deferred: durability == .deferred)
                let result = try body(transaction)
                try transaction.flush()
                reserved = transaction.reserved
                startedChain = transaction.startedChain
                return result
            },
            afterCommit: { commit in
                sendingSyncPoint.committed(commit, seen: seenVersion, startedChain: startedChain)
            })
        // It sealed beyond a reservation (the first seals of a session, then one in 256): synced now,
        // on this thread, before its envelopes can leave (a sync off the thread costs two hops).
        if reserved {
            diagnostics?.update { $0.reservingCommits += 1 }
            try logSyncs.sync { try syncLogNow(through: commit) }
        } else if startedChain, syncsStepsInBackground {
            // A DH ratchet step (a received message turned the ratchet): nothing sealed on its
            // chain may leave before it is on disk (`syncBeforeSending`). Synced now, off this
            // thread, so that a reply sealed on the chain a moment later finds it there and
            // leaves without waiting for the disk; a sync that fails here is met again there.
            logSyncs.async { try? self.syncLogNow(through: commit) }
        }
        return (result, commit)
    }

    /// `body` between BEGIN and COMMIT, rolled back if anything throws. Not GRDB's
    /// `inTransaction`: it compiles its BEGIN and COMMIT again for every transaction, and the
    /// store runs several transactions per message; these are prepared once per connection.
    private static func inTransaction<T>(_ db: Database, begin: String, _ body: (Database) throws -> T) throws -> T {
        try db.cachedStatement(sql: begin).execute()
        do {
            let result = try body(db)
            try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            // A failed COMMIT leaves the transaction open (SQLITE_BUSY); end it either way.
            if db.isInsideTransaction { try? db.rollback() }
            throw error
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
