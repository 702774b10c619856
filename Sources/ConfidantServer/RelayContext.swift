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
        if usesPostgres { return try await db.transaction(body) }
        await writeGate.acquire()
        let synchronous = configuration.sqliteSynchronous.rawValue
        do {
            // `synchronous` is per connection and the pool hands out any of several, so each write
            // sets it on the connection it runs on (a no-op statement without I/O). NORMAL: a commit
            // survives a crash of the server; FULL: also a power cut (docs/OPERATIONS.md).
            let result = try await db.withConnection { connection in
                if let sql = connection as? any SQLDatabase {
                    try await sql.raw(SQLQueryString("PRAGMA synchronous=\(unsafeRaw: synchronous)")).run()
                }
                return try await connection.transaction(body)
            }
            await writeGate.release()
            return result
        } catch {
            await writeGate.release()
            throw error
        }
    }

    /// Within a write transaction: stores mailbox entries. On PostgreSQL it first holds
    /// per-device locks until commit, so that entries for one device commit in cursor order (a
    /// stream reading "after cursor c" can then never miss an entry that commits later with a
    /// smaller cursor). SQLite has one writer anyway.
    func storeMailboxEntries(_ entries: [MailboxQueries.NewEntry], in db: any Database) async throws {
        guard !entries.isEmpty else { return }
        if usesPostgres, let sql = db as? any SQLDatabase {
            for address in Set(entries.map(\.recipient)).sorted(by: { $0.description < $1.description }) {
                try await sql.raw("SELECT pg_advisory_xact_lock(hashtextextended(\(bind: address.description), 0))").run()
            }
        }
        try await MailboxQueries.insert(entries, on: db)
    }

    /// After commit: wakes local streams and, on PostgreSQL, the other instances' streams.
    func publish(_ addresses: Set<DeviceAddress>, on db: any Database, logger: Logger) async {
        guard !addresses.isEmpty else { return }
        await hub.wake(addresses)
        guard usesPostgres, let sql = db as? any SQLDatabase else { return }
        let all = addresses.map(\.description)
        // NOTIFY payloads must stay under 8,000 bytes; an address is 73 characters.
        for start in stride(from: 0, to: all.count, by: 100) {
            let payload = all[start..<min(start + 100, all.count)].joined(separator: ",")
            do {
                try await sql.raw("SELECT pg_notify(\(bind: PostgresMailboxListener.channel), \(bind: payload))").run()
            } catch {
                logger.warning("could not notify other instances; their streams catch up on the next wake", metadata: ["error": "\(error)"])
            }
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
