import Fluent
import Foundation
import Logging
import SQLKit

/// Group commit for sends: batches that arrive while a transaction runs are stored together in
/// the next one, so the database commits once per group instead of once per message (on SQLite,
/// with its single writer, this is what lets throughput grow with concurrency). Each message is
/// still checked on its own; one refused message does not affect the others in its group.
actor MessageWriter {
    struct Submission: Sendable {
        let sender: DeviceAddress
        let messageID: UUID
        let envelopes: [Envelope]
    }

    struct Envelope: Sendable {
        let recipient: DeviceAddress
        let bytes: Data
    }

    enum Outcome: Sendable {
        case stored(count: Int, at: Date)
        case duplicate(count: Int, at: Date)
    }

    static let maximumGroup = 256

    private let context: RelayContext
    private var queue: [(Submission, CheckedContinuation<Result<Outcome, any Error>, Never>)] = []
    private var draining = false

    init(context: RelayContext) {
        self.context = context
    }

    func submit(_ submission: Submission, db: any Database, logger: Logger) async throws -> Outcome {
        let result = await withCheckedContinuation { continuation in
            queue.append((submission, continuation))
            if !draining {
                draining = true
                Task { await drain(db: db, logger: logger) }
            }
        }
        return try result.get()
    }

    private func drain(db: any Database, logger: Logger) async {
        while !queue.isEmpty {
            let group = Array(queue.prefix(Self.maximumGroup))
            queue.removeFirst(group.count)
            let submissions = group.map(\.0)
            let results: [Result<Outcome, any Error>]
            do {
                results = try await context.write(db) { [context] db in try await Self.store(submissions, context: context, on: db) }
            } catch {
                results = Array(repeating: .failure(error), count: group.count)
            }
            var woken = Set<DeviceAddress>()
            for ((submission, continuation), result) in zip(group, results) {
                continuation.resume(returning: result)
                if case .success(.stored) = result { woken.formUnion(submission.envelopes.map(\.recipient)) }
            }
            await context.publish(woken, on: db, logger: logger)
        }
        draining = false
    }

    /// Inside one transaction: answers duplicates from `posted_messages`, checks each message's
    /// devices, then writes every accepted message with a few multi-row statements.
    private static func store(_ submissions: [Submission], context: RelayContext, on db: any Database) async throws -> [Result<Outcome, any Error>] {
        let now = Date()
        struct PostedKey: Hashable { let sender: UUID; let message: UUID }
        var posted: [PostedKey: (Int, Date)] = [:]
        let sql = try MailboxQueries.sql(db)
        for row in try await sql.select().columns("sender_user_id", "message_id", "stored", "received_at").from(PostedMessageRecord.schema)
            // Both columns, so that the unique (sender_user_id, message_id) index answers it.
            .where("sender_user_id", .in, Array(Set(submissions.map(\.sender.userID))))
            .where("message_id", .in, submissions.map(\.messageID)).all() {
            posted[PostedKey(sender: try row.decode(column: "sender_user_id", as: UUID.self), message: try row.decode(column: "message_id", as: UUID.self))] =
                (try row.decode(column: "stored", as: Int.self), try row.decode(column: "received_at", as: Date.self))
        }
        let users = Array(Set(submissions.flatMap { $0.envelopes.map(\.recipient.userID) + [$0.sender.userID] }))
        let known = Set(try await sql.select().column("id").from(UserRecord.schema).where("id", .in, users).all()
            .map { try $0.decode(column: "id", as: UUID.self) })
        var devices: [UUID: Set<DeviceAddress>] = [:]
        for row in try await sql.select().columns("user_id", "device_id").from(DeviceRecord.schema)
            .where("user_id", .in, users).where("retired_at", .is, SQLLiteral.null).all() {
            let address = DeviceAddress(userID: try row.decode(column: "user_id", as: UUID.self), deviceID: try row.decode(column: "device_id", as: UUID.self))
            devices[address.userID, default: []].insert(address)
        }

        var results: [Result<Outcome, any Error>] = []
        var mailbox: [MailboxQueries.NewEntry] = []
        var accepted: [(sender: UUID, message: UUID, stored: Int)] = []
        var conversations: [UUID: Set<UUID>] = [:]
        for submission in submissions {
            let key = PostedKey(sender: submission.sender.userID, message: submission.messageID)
            if let (count, at) = posted[key] {
                results.append(.success(.duplicate(count: count, at: at)))
                continue
            }
            let recipients = submission.envelopes.map(\.recipient)
            do {
                try checkDevices(recipients, sender: submission.sender, known: known, devices: devices)
            } catch {
                results.append(.failure(error))
                continue
            }
            mailbox += submission.envelopes.map {
                MailboxQueries.NewEntry(recipient: $0.recipient, kind: .envelope, sender: submission.sender, messageID: submission.messageID,
                                        payload: $0.bytes, receivedAt: now)
            }
            accepted.append((submission.sender.userID, submission.messageID, recipients.count))
            posted[key] = (recipients.count, now)
            conversations[submission.sender.userID, default: []].formUnion(Set(recipients.map(\.userID)).subtracting([submission.sender.userID]))
            results.append(.success(.stored(count: recipients.count, at: now)))
        }
        guard !mailbox.isEmpty else { return results }
        try await context.storeMailboxEntries(mailbox, in: db)
        var insert = sql.insert(into: PostedMessageRecord.schema).columns("id", "sender_user_id", "message_id", "stored", "received_at")
        for record in accepted {
            insert = insert.values(SQLBind(UUID()), SQLBind(record.sender), SQLBind(record.message), SQLBind(record.stored), SQLBind(now))
        }
        try await insert.run()
        for (sender, peers) in conversations {
            try await touchConversations(between: sender, and: peers, at: now, on: db)
        }
        return results
    }

    /// A message must reach every current device of each recipient and every other current
    /// device of the sender, and no retired one, so that no device silently misses it.
    static func checkDevices(_ recipients: [DeviceAddress], sender: DeviceAddress, known: Set<UUID>, devices: [UUID: Set<DeviceAddress>]) throws(APIFailure) {
        let users = Set(recipients.map(\.userID)).union([sender.userID])
        if let missing = users.subtracting(known).first {
            throw APIFailure(.notFound, "unknown_user", "User \(missing.uuidString.lowercased()) does not exist (any more).")
        }
        let expected = users.reduce(into: Set<DeviceAddress>()) { $0.formUnion(devices[$1] ?? []) }.subtracting([sender])
        let given = Set(recipients)
        guard given == expected else {
            let missing = expected.subtracting(given).map(\.description).sorted()
            let stale = given.subtracting(expected).map(\.description).sorted()
            throw APIFailure(.conflict, "device_mismatch",
                             "Devices changed: reload the recipients' keys and seal again. Missing: \(missing.isEmpty ? "none" : missing.joined(separator: ", ")); no longer current: \(stale.isEmpty ? "none" : stale.joined(separator: ", ")).")
        }
    }

    /// "Last activity" for both directions of each pair, inserted or updated in one statement.
    private static func touchConversations(between sender: UUID, and peers: Set<UUID>, at now: Date, on db: any Database) async throws {
        guard !peers.isEmpty, let sql = db as? any SQLDatabase else { return }
        var insert = sql.insert(into: ConversationRecord.schema).columns("id", "owner_id", "peer_id", "last_activity")
        for peer in peers {
            insert = insert.values(SQLBind(UUID()), SQLBind(sender), SQLBind(peer), SQLBind(now))
            insert = insert.values(SQLBind(UUID()), SQLBind(peer), SQLBind(sender), SQLBind(now))
        }
        try await insert.onConflict(with: ["owner_id", "peer_id"]) { $0.set(excludedValueOf: "last_activity") }.run()
    }
}
