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
actor MailboxWriter {
    enum Request: Sendable {
        case send(MailboxSubmission, reply: @Sendable (Result<MailboxReceipt, any Error>) -> Void)
        /// Deletes those of the cursors that belong to the device; anyone else's are left alone.
        case acknowledge([Int64], for: DeviceAddress, reply: @Sendable (Result<Int, any Error>) -> Void)
    }

    static let maximumGroup = 1024

    private let publisher: MailboxPublisher
    private let mailboxLimit: Int
    private let now: @Sendable () -> Date
    private var queue: [Request] = []
    private var draining = false

    init(publisher: MailboxPublisher, mailboxLimit: Int, now: @escaping @Sendable () -> Date) {
        self.publisher = publisher
        self.mailboxLimit = mailboxLimit
        self.now = now
    }

    /// Enqueues `request` without waiting; its reply runs once its group has committed (or
    /// failed). Callers that enqueue one after another keep their order.
    func enqueue(_ request: Request) {
        queue.append(request)
        if !draining {
            draining = true
            Task { await drain() }
        }
    }

    private func drain() async {
        while !queue.isEmpty {
            let group = Array(queue.prefix(Self.maximumGroup))
            queue.removeFirst(group.count)
            let results: GroupResults
            do {
                // A group's work is its statements and a little bookkeeping: it may run on the
                // connection's event loop.
                results = try await publisher.write(singleStatement: Self.isOneStatement(group), onConnectionLoop: true)
                {
                    [publisher, now, mailboxLimit] db, publication in
                    try await Self.apply(
                        group, at: now().wholeMilliseconds, mailboxLimit: mailboxLimit, publisher: publisher,
                        publishing: publication, on: db)
                }
            } catch {
                results = GroupResults(failure: error)
            }
            // Answering (a stream encodes a receipt per send) need not hold up the next group.
            Task.detached { results.reply(to: group) }
        }
        draining = false
    }

    /// Acknowledgements alone, few enough for one `DELETE`: they need no transaction around them.
    private static func isOneStatement(_ group: [Request]) -> Bool {
        var cursors = 0
        for request in group {
            guard case .acknowledge(let some, _, _) = request else { return false }
            cursors += some.count
        }
        return cursors <= MailboxTable.cursorsPerDelete
    }

    /// A group's outcome, one per request in order.
    private struct GroupResults: Sendable {
        var receipts: [Int: Result<MailboxReceipt, any Error>] = [:]
        var acknowledged: [Int: Int] = [:]
        var failure: (any Error)?

        init() {}

        init(failure: any Error) {
            self.failure = failure
        }

        func reply(to group: [Request]) {
            for (index, request) in group.enumerated() {
                switch request {
                case .send(_, let reply):
                    reply(failure.map { .failure($0) } ?? receipts[index] ?? .failure(APIFailure.internalError))
                case .acknowledge(_, _, let reply):
                    reply(
                        failure.map { .failure($0) } ?? acknowledged[index].map { .success($0) }
                            ?? .failure(APIFailure.internalError))
                }
            }
        }
    }

    /// The group's sends, then its acknowledgements, in one transaction.
    private static func apply(
        _ group: [Request], at now: Date, mailboxLimit: Int, publisher: MailboxPublisher,
        publishing publication: MailboxPublication,
        on db: any Database
    ) async throws -> GroupResults {
        var results = GroupResults()
        var sends: [(index: Int, submission: MailboxSubmission)] = []
        var acknowledgements: [(index: Int, cursors: [Int64], address: DeviceAddress)] = []
        for (index, request) in group.enumerated() {
            switch request {
            case .send(let submission, _): sends.append((index, submission))
            case .acknowledge(let cursors, let address, _): acknowledgements.append((index, cursors, address))
            }
        }
        if !sends.isEmpty {
            let receipts = try await store(
                sends.map(\.submission), at: now, mailboxLimit: mailboxLimit, publisher: publisher,
                publishing: publication, on: db)
            for (send, receipt) in zip(sends, receipts) { results.receipts[send.index] = receipt }
        }
        if !acknowledgements.isEmpty {
            let counts = try await MailboxTable.delete(acknowledgements.map { ($0.cursors, $0.address) }, on: db)
            for (acknowledgement, count) in zip(acknowledgements, counts) {
                results.acknowledged[acknowledgement.index] = count
            }
        }
        return results
    }

    /// Inside one transaction: answers duplicates from the sent message ids, checks each message's
    /// devices, then writes every accepted message with a few multi-row statements.
    private static func store(
        _ submissions: [MailboxSubmission], at now: Date, mailboxLimit: Int, publisher: MailboxPublisher,
        publishing publication: MailboxPublication, on db: any Database
    ) async throws -> [Result<MailboxReceipt, any Error>] {
        let users = Array(Set(submissions.flatMap { $0.envelopes.map(\.recipient.userID) + [$0.sender.userID] }))
        let directory = try await RecipientDirectory.load(
            users, readingLastCursor: !publisher.database.isPostgres,
            postedPairs: submissions.map { ($0.sender.userID, $0.messageID) }, on: db)
        var posted = directory.posted
        // How full each recipient's mailbox is, counting what this group adds.
        var pending = directory.pending

        var results: [Result<MailboxReceipt, any Error>] = []
        var entries: [NewMailboxEntry] = []
        var accepted: [(key: PostedMessageTable.Key, row: PostedMessageTable.Row)] = []
        var conversations: [UUID: Set<UUID>] = [:]
        for submission in submissions {
            let key = PostedMessageTable.Key(sender: submission.sender.userID, message: submission.messageID)
            if let earlier = posted[key] {
                results.append(
                    .success(MailboxReceipt(stored: earlier.stored, duplicate: true, receivedAt: earlier.receivedAt)))
                continue
            }
            let recipients = submission.envelopes.map(\.recipient)
            do {
                try directory.check(recipients, sender: submission.sender)
                if let full = recipients.first(where: { pending[$0, default: 0] >= mailboxLimit }) {
                    throw APIFailure(
                        .quotaExceeded,
                        """
                        The mailbox of device \(full) is full (\(mailboxLimit) messages wait unread); \
                        try again once it has read some.
                        """, retryAfter: 60)
                }
            } catch {
                results.append(.failure(error))
                continue
            }
            for recipient in recipients { pending[recipient, default: 0] += 1 }
            entries += submission.envelopes.map {
                NewMailboxEntry(
                    recipient: $0.recipient, kind: .envelope, sender: submission.sender,
                    messageID: submission.messageID,
                    payload: $0.bytes, receivedAt: now)
            }
            let row = PostedMessageTable.Row(stored: recipients.count, receivedAt: now)
            accepted.append((key, row))
            posted[key] = row
            conversations[submission.sender.userID, default: []]
                .formUnion(Set(recipients.map(\.userID)).subtracting([submission.sender.userID]))
            results.append(.success(MailboxReceipt(stored: recipients.count, duplicate: false, receivedAt: now)))
        }
        guard !entries.isEmpty else { return results }
        try await publisher.store(entries, in: db, publishing: publication, lastCursor: directory.lastCursor)
        try await PostedMessageTable.insert(accepted, on: db)
        try await ConversationTable.touch(conversations, at: now, on: db)
        return results
    }
}
