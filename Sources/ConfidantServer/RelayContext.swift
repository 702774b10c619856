import ConfidantCrypto
import Fluent
import Foundation
import Synchronization
import SQLKit
import Vapor

/// The signed-in caller of a request: whose session, on which device.
struct Caller: Sendable {
    let userID: UUID
    let deviceID: UUID
    let sessionID: UUID
    var address: DeviceAddress { DeviceAddress(userID: userID, deviceID: deviceID) }
}

/// What every handler shares: configuration, the mailbox hub and the rules for sessions and writes.
struct RelayContext: Sendable {
    let configuration: ServerConfiguration
    let hub: MailboxHub
    let usesPostgres: Bool
    /// Encrypts arithmetic mappings and TOTP secrets at rest.
    let authSecrets: AuthSecrets
    /// Sends e-mail sign-in codes.
    let mailer: any CodeMailer
    let writeGate = WriteGate()
    let checkpoints = WALCheckpoints()
    let sessions = SessionCache()
    /// Set once by `RelayServer` (the writer needs the context, so it cannot be built with it).
    private let messageWriter = MessageWriterSlot()
    var messages: MessageWriter { messageWriter.writer(for: self) }

    var passwords: PasswordPolicy { PasswordPolicy(cost: configuration.passwordCost) }
    var blobDirectory: URL { configuration.dataDirectory.appendingPathComponent("blobs") }

    /// The caller behind `Authorization: Bearer …`, or `unauthenticated`.
    func authenticate(_ request: Request) async throws -> Caller {
        guard let header = request.headers.first(name: .authorization) else { throw APIFailure.unauthenticated }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", (20...100).contains(parts[1].count) else {
            throw APIFailure.unauthenticated
        }
        let hash = SessionToken.hash(String(parts[1]))
        let now = Date()
        if let caller = sessions.caller(for: hash, now: now) { return caller }
        guard let (caller, expires) = try await MailboxQueries.session(tokenHash: hash, now: now, on: request.db) else {
            throw APIFailure.unauthenticated
        }
        sessions.remember(caller, for: hash, sessionExpires: expires, now: now)
        return caller
    }

    /// The network address used for per-address limits.
    func clientAddress(_ request: Request) -> String {
        if configuration.trustForwardedFor, let forwarded = request.headers.forwarded.first?.for ?? request.headers.first(name: "X-Forwarded-For")?
            .split(separator: ",").first.map({ String($0).trimmingCharacters(in: .whitespaces) }) {
            return forwarded
        }
        return request.remoteAddress?.ipAddress ?? "unknown"
    }

    /// Runs `body` in one transaction; on SQLite, one writer at a time (see `WriteGate`).
    func write<T: Sendable>(_ db: any Database, _ body: @escaping @Sendable (any Database) async throws -> T) async throws -> T {
        try await write(db) { db, _ in try await body(db) }
    }

    /// Runs `body` in one transaction; mailbox entries it stores through `publication` reach the
    /// streams once it commits. On SQLite, one writer at a time (see `WriteGate`), and the stored
    /// rows go to this instance's streams before the next writer starts, so every stream gets
    /// its entries in cursor order without reading them back. On PostgreSQL, where other
    /// instances write too, streams here and there are woken to read.
    func write<T: Sendable>(_ db: any Database, _ body: @escaping @Sendable (any Database, MailboxPublication) async throws -> T) async throws -> T {
        let publication = MailboxPublication()
        if usesPostgres {
            let result = try await db.transaction { try await body($0, publication) }
            await wakeStreams(publication.addresses, on: db)
            return result
        }
        await writeGate.acquire()
        let synchronous = configuration.sqliteSynchronous.rawValue
        do {
            // `synchronous` is per connection and the pool hands out any of several, so each write
            // sets it on the connection it runs on (a no-op statement without I/O). NORMAL: a commit
            // survives a crash of the server; FULL: also a power cut (docs/OPERATIONS.md).
            let result = try await db.withConnection { connection in
                if let sql = connection as? any SQLDatabase {
                    try await sql.raw(SQLQueryString("PRAGMA synchronous=\(unsafeRaw: synchronous)")).run()
                    try await sql.raw("PRAGMA wal_autocheckpoint=0").run()
                }
                return try await connection.transaction { try await body($0, publication) }
            }
            hub.deliver(publication.rows)
            await writeGate.release()
            checkpoints.committed(db)
            return result
        } catch {
            await writeGate.release()
            throw error
        }
    }

    /// Within a write transaction: stores mailbox entries for `publication` to hand over after
    /// commit. On PostgreSQL it first holds per-device locks until commit, so that entries for
    /// one device commit in cursor order (a stream reading "after cursor c" can then never miss
    /// an entry that commits later with a smaller cursor). SQLite has one writer anyway.
    func storeMailboxEntries(_ entries: [MailboxQueries.NewEntry], in db: any Database, publishing publication: MailboxPublication) async throws {
        guard !entries.isEmpty else { return }
        if usesPostgres, let sql = db as? any SQLDatabase {
            // One statement; the locks are taken in array order, sorted, so two writers never wait on each other crosswise.
            let addresses = Set(entries.map(\.recipient.description)).sorted()
            try await sql.raw("SELECT pg_advisory_xact_lock(hashtextextended(address, 0)) FROM unnest(\(bind: addresses)::text[]) AS address").run()
            try await MailboxQueries.insert(entries, on: db)
            publication.add(entries.map(\.recipient))
        } else {
            publication.add(try await MailboxQueries.insertNumbered(entries, on: db))
        }
    }

    /// PostgreSQL, after commit: wakes local streams and, through NOTIFY, the other instances'.
    private func wakeStreams(_ addresses: Set<DeviceAddress>, on db: any Database) async {
        guard !addresses.isEmpty else { return }
        hub.wake(addresses)
        guard let sql = db as? any SQLDatabase else { return }
        let all = addresses.map(\.description)
        // NOTIFY payloads must stay under 8,000 bytes; an address is 73 characters.
        for start in stride(from: 0, to: all.count, by: 100) {
            let payload = all[start..<min(start + 100, all.count)].joined(separator: ",")
            do {
                try await sql.raw("SELECT pg_notify(\(bind: PostgresMailboxListener.channel), \(bind: payload))").run()
            } catch {
                db.logger.warning("could not notify other instances; their streams catch up on the next wake", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// Mailbox entries one write transaction stored: the rows themselves (SQLite) or whose mailboxes
/// they went to (PostgreSQL).
final class MailboxPublication: Sendable {
    private let stored = Mutex<(rows: [MailboxQueries.AddressedRow], addresses: Set<DeviceAddress>)>(([], []))

    var rows: [MailboxQueries.AddressedRow] { stored.withLock { $0.rows } }
    /// Every mailbox written to, whether added as rows or as addresses.
    var addresses: Set<DeviceAddress> { stored.withLock { $0.addresses.union($0.rows.map(\.recipient)) } }

    func add(_ rows: [MailboxQueries.AddressedRow]) {
        stored.withLock { $0.rows += rows }
    }

    func add(_ addresses: [DeviceAddress]) {
        stored.withLock { $0.addresses.formUnion(addresses) }
    }

    /// Forgets entries for `userID`'s devices that the same transaction deleted again.
    func withdraw(user userID: UUID) {
        stored.withLock { stored in
            stored.rows.removeAll { $0.recipient.userID == userID }
            stored.addresses = stored.addresses.filter { $0.userID != userID }
        }
    }
}

/// Lazily creates the one `MessageWriter` of a relay.
final class MessageWriterSlot: Sendable {
    private let slot = Mutex<MessageWriter?>(nil)

    func writer(for context: RelayContext) -> MessageWriter {
        slot.withLock { slot in
            if let writer = slot { return writer }
            let writer = MessageWriter(context: context)
            slot = writer
            return writer
        }
    }
}
