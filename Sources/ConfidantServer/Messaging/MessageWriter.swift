import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// Group commit for sends and acknowledgements: requests that arrive while a transaction runs
/// are stored together in the next one, so the database commits once per group instead of once
/// per message (on SQLite, with its single writer, this is what lets throughput grow with
/// concurrency). Each request is still checked on its own; one refused message does not affect
/// the others in its group. Requests are applied in the order they were enqueued, so messages
/// one connection sends in a row get increasing cursors.
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

    enum Request: Sendable {
        case send(Submission)
        /// Deletes those of the cursors that belong to the device; anyone else's are left alone.
        case acknowledge([Int64], for: DeviceAddress)
    }

    enum Outcome: Sendable {
        case stored(count: Int, at: Date)
        case duplicate(count: Int, at: Date)
        case acknowledged(Int)
    }

    typealias Completion = @Sendable (Result<Outcome, any Error>) -> Void

    static let maximumGroup = 1024

    private let context: RelayContext
    private var queue: [(Request, Completion)] = []
    private var draining = false

    init(context: RelayContext) {
        self.context = context
    }

    /// Enqueues `request` and waits until its group has committed.
    func submit(_ request: Request, db: any Database) async throws -> Outcome {
        let result = await withCheckedContinuation { continuation in
            enqueue(request, db: db) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Enqueues `request` without waiting; `completion` runs once its group has committed (or
    /// failed). Callers that enqueue one after another keep their order.
    func enqueue(_ request: Request, db: any Database, completion: @escaping Completion) {
        queue.append((request, completion))
        if !draining {
            draining = true
            Task { await drain(db: db) }
        }
    }

    private func drain(db: any Database) async {
        while !queue.isEmpty {
            let group = Array(queue.prefix(Self.maximumGroup))
            queue.removeFirst(group.count)
            let requests = group.map(\.0)
            let results: [Result<Outcome, any Error>]
            do {
                results = try await context.write(db) { [context] db, publication in
                    try await Self.apply(requests, context: context, publishing: publication, on: db)
                }
            } catch {
                results = Array(repeating: .failure(error), count: group.count)
            }
            // Answering (a stream encodes a receipt per send) need not hold up the next group.
            Task.detached {
                for ((_, completion), result) in zip(group, results) { completion(result) }
            }
        }
        draining = false
    }

    /// The group's sends, then its acknowledgements, in one transaction; results in request order.
    private static func apply(_ requests: [Request], context: RelayContext, publishing publication: MailboxPublication,
                              on db: any Database) async throws -> [Result<Outcome, any Error>] {
        var results = [Result<Outcome, any Error>?](repeating: nil, count: requests.count)
        var sends: [(index: Int, submission: Submission)] = []
        for (index, request) in requests.enumerated() {
            if case .send(let submission) = request { sends.append((index, submission)) }
        }
        if !sends.isEmpty {
            for (send, result) in zip(sends, try await store(sends.map(\.submission), context: context, publishing: publication, on: db)) {
                results[send.index] = result
            }
        }
        let acknowledgements = requests.enumerated().compactMap { index, request -> (index: Int, cursors: [Int64], address: DeviceAddress)? in
            guard case .acknowledge(let cursors, let address) = request else { return nil }
            return (index, cursors, address)
        }
        if !acknowledgements.isEmpty {
            let counts = try await MailboxQueries.delete(acknowledgements.map { ($0.cursors, $0.address) }, on: db)
            for (acknowledgement, count) in zip(acknowledgements, counts) { results[acknowledgement.index] = .success(.acknowledged(count)) }
        }
        return results.map { $0 ?? .failure(APIFailure(.`internal`, "A request in a group got no result.")) }
    }

    /// Inside one transaction: answers duplicates from `posted_messages`, checks each message's
    /// devices, then writes every accepted message with a few multi-row statements.
    private static func store(_ submissions: [Submission], context: RelayContext, publishing publication: MailboxPublication,
                              on db: any Database) async throws -> [Result<Outcome, any Error>] {
        let now = Date().wholeMilliseconds
        struct PostedKey: Hashable { let sender: UUID; let message: UUID }
        var posted: [PostedKey: (Int, Date)] = [:]
        let sql = try MailboxQueries.sql(db)
        for row in try await sql.select().columns("sender_user_id", "message_id", "stored", "received_at").from(PostedMessageRecord.schema)
            // Pairs, so that the unique (sender_user_id, message_id) index answers one probe per
            // message (two IN lists would probe every sender with every message id).
            .where(SQLGroupExpression([SQLColumn("sender_user_id"), SQLColumn("message_id")]), .in,
                   MailboxQueries.values(submissions.map { [UUIDValue($0.sender.userID), UUIDValue($0.messageID)] })).all() {
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
        try await context.storeMailboxEntries(mailbox, in: db, publishing: publication)
        var insert = sql.insert(into: PostedMessageRecord.schema).columns("id", "sender_user_id", "message_id", "stored", "received_at")
        for record in accepted {
            insert = insert.values(UUIDValue(UUID()), UUIDValue(record.sender), UUIDValue(record.message), SQLBind(record.stored), SQLBind(now))
        }
        try await insert.run()
        try await touchConversations(conversations, at: now, on: db)
        return results
    }

    /// A message must reach every current device of each recipient and every other current
    /// device of the sender, and no retired one, so that no device silently misses it.
    static func checkDevices(_ recipients: [DeviceAddress], sender: DeviceAddress, known: Set<UUID>, devices: [UUID: Set<DeviceAddress>]) throws(APIFailure) {
        let users = Set(recipients.map(\.userID)).union([sender.userID])
        if let missing = users.subtracting(known).first {
            throw APIFailure(.unknownUser, "User \(missing.canonicalString) does not exist (any more).")
        }
        let expected = users.reduce(into: Set<DeviceAddress>()) { $0.formUnion(devices[$1] ?? []) }.subtracting([sender])
        let given = Set(recipients)
        guard given == expected else {
            let missing = expected.subtracting(given).map(\.description).sorted()
            let stale = given.subtracting(expected).map(\.description).sorted()
            throw APIFailure(.deviceMismatch, "Devices changed: reload the recipients' keys and seal again. Missing: \(missing.isEmpty ? "none" : missing.joined(separator: ", ")); no longer current: \(stale.isEmpty ? "none" : stale.joined(separator: ", ")).")
        }
    }

    /// "Last activity" for both directions of each pair, inserted or updated in one statement.
    private static func touchConversations(_ conversations: [UUID: Set<UUID>], at now: Date, on db: any Database) async throws {
        var pairs = Set<[UUID]>()
        for (sender, peers) in conversations {
            for peer in peers { pairs.formUnion([[sender, peer], [peer, sender]]) }
        }
        // A statement may touch a row once (PostgreSQL), hence the set; SQLite takes at most
        // 32,766 bound values, 4 per row.
        let all = Array(pairs)
        for start in stride(from: 0, to: all.count, by: 4000) {
            var insert = try MailboxQueries.sql(db).insert(into: ConversationRecord.schema).columns("id", "owner_id", "peer_id", "last_activity")
            for pair in all[start..<min(start + 4000, all.count)] {
                insert = insert.values(UUIDValue(UUID()), UUIDValue(pair[0]), UUIDValue(pair[1]), SQLBind(now))
            }
            try await insert.onConflict(with: ["owner_id", "peer_id"]) { $0.set(excludedValueOf: "last_activity") }.run()
        }
    }
}
