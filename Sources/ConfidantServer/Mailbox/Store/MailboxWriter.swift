import ConfidantCrypto
import Fluent
import Foundation
import NIOCore
import SQLKit
import Synchronization

/// Group commit for sends and acknowledgements: requests that arrive while a transaction runs
/// are stored together in the next one, so the database commits once per group instead of once
/// per message (on SQLite, with its single writer, this is what lets throughput grow with
/// concurrency). Each request is still checked on its own; one refused message does not affect
/// the others in its group. Requests are applied in the order they were enqueued, so messages
/// one connection sends in a row get increasing cursors.
///
/// On SQLite the groups run on the relay's own write connection's thread (`SQLiteWriter`): a
/// request is handed from the connection that made it straight to that thread, which stores its
/// group, hands the entries to the streams and answers, with no task in between. A stream's
/// sends and acknowledgements that find that thread idle are stored on the stream's event loop
/// instead, once it has read them (`SQLiteWriter.runIfIdle`), without the two thread hand-overs.
final class MailboxWriter: Sendable {
    enum Request: Sendable {
        /// `replyOn`: the event loop `reply` is to run on (a stream's connection's), or nil to run
        /// it where the group was stored.
        case send(
            MailboxSubmission, replyOn: (any EventLoop)?, reply: @Sendable (Result<MailboxReceipt, any Error>) -> Void)
        /// Deletes those of the cursors that belong to the device; anyone else's are left alone.
        /// `on`: the event loop of the stream that acknowledged, or nil.
        case acknowledge(
            [Int64], for: DeviceAddress, on: (any EventLoop)?, reply: @Sendable (Result<Int, any Error>) -> Void)

        /// The event loop of the stream that made the request, if a stream made it.
        var eventLoop: (any EventLoop)? {
            switch self {
            case .send(_, let loop, _): loop
            case .acknowledge(_, _, let loop, _): loop
            }
        }
    }

    static let maximumGroup = 1024

    private let publisher: MailboxPublisher
    private let mailboxLimit: Int
    private let now: @Sendable () -> Date
    /// Requests not yet in a group, and whether a drain is under way to take them.
    private let queue = Mutex<(requests: [Request], draining: Bool)>(([], false))

    init(publisher: MailboxPublisher, mailboxLimit: Int, now: @escaping @Sendable () -> Date) {
        self.publisher = publisher
        self.mailboxLimit = mailboxLimit
        self.now = now
    }

    /// Enqueues `request` without waiting; its reply runs once its group has committed (or
    /// failed). Callers that enqueue one after another keep their order.
    func enqueue(_ request: Request) {
        let start = queue.withLock { queue in
            queue.requests.append(request)
            guard !queue.draining else { return false }
            queue.draining = true
            return true
        }
        guard start else { return }
        if let writer = publisher.database.writer {
            // A stream's send or acknowledgement, on its connection's event loop: stored on that
            // loop once it has read what arrived with it (what is read in the same turn goes in
            // the same transaction), if nothing else is being written then
            // (`SQLiteWriter.runIfIdle`). An acknowledgement handed to the write thread instead
            // cost a wake-up of that thread for a transaction of its own.
            if let loop = request.eventLoop, loop.inEventLoop {
                loop.execute { [self] in
                    if !writer.runIfIdle({ thread in drainOne(on: thread, of: writer) }) {
                        writer.submit { [self] thread in drain(on: thread) }
                    }
                }
                return
            }
            writer.submit { [self] thread in drain(on: thread) }
        } else {
            Task { await drain() }
        }
    }

    /// The next group, or nil (and no drain under way) when none waits.
    private func nextGroup() -> [Request]? {
        queue.withLock { queue in
            guard !queue.requests.isEmpty else {
                queue.draining = false
                return nil
            }
            let group = Array(queue.requests.prefix(Self.maximumGroup))
            queue.requests.removeFirst(group.count)
            return group
        }
    }

    /// SQLite: every waiting group, on the write connection's thread, each answered there.
    private func drain(on thread: borrowing SQLiteWriter.OnThread) {
        while let group = nextGroup() {
            store(group, on: thread).reply(to: group)
        }
    }

    /// SQLite, on an event loop that found the write connection idle: the first group here,
    /// and whatever came meanwhile on the write thread. A group that would have waited (for the
    /// gate or for another process's lock) goes back to the front of the queue, for the thread.
    private func drainOne(on thread: borrowing SQLiteWriter.OnThread, of writer: SQLiteWriter) {
        guard let group = nextGroup() else { return }
        let results = store(group, on: thread)
        if results.failure is SQLiteWriter.WouldWait {
            queue.withLock { $0.requests.insert(contentsOf: group, at: 0) }
            writer.submit { [self] thread in drain(on: thread) }
            return
        }
        results.reply(to: group)
        let more = queue.withLock { queue in
            if queue.requests.isEmpty { queue.draining = false }
            return queue.draining
        }
        if more { writer.submit { [self] thread in drain(on: thread) } }
    }

    /// One group in one transaction on the write connection, with its outcome per request.
    private func store(_ group: [Request], on thread: borrowing SQLiteWriter.OnThread) -> GroupResults {
        let now = now().wholeMilliseconds
        do {
            return try publisher.writeOnOwnConnection(on: thread) { [mailboxLimit] connection, publication in
                try Self.apply(group, at: now, mailboxLimit: mailboxLimit, publishing: publication, on: connection)
            }
        } catch {
            return GroupResults(failure: error)
        }
    }

    /// PostgreSQL: every waiting group, statement by statement through Fluent.
    private func drain() async {
        while let group = nextGroup() {
            let now = now().wholeMilliseconds
            let results: GroupResults
            do {
                results = try await publisher.write(singleStatement: Self.isOneStatement(group)) {
                    [publisher, mailboxLimit] db, publication in
                    try await Self.apply(
                        group, at: now, mailboxLimit: mailboxLimit, publisher: publisher, publishing: publication,
                        on: db)
                }
            } catch {
                results = GroupResults(failure: error)
            }
            // Answering (a stream encodes a receipt per send) need not hold up the next group.
            Task.detached { results.reply(to: group) }
        }
    }

    /// Acknowledgements alone, few enough for one `DELETE`: they need no transaction around them.
    private static func isOneStatement(_ group: [Request]) -> Bool {
        var cursors = 0
        for request in group {
            guard case .acknowledge(let some, _, _, _) = request else { return false }
            cursors += some.count
        }
        return cursors <= MailboxTable.cursorsPerDelete
    }

    /// The group's sends, then its acknowledgements, in one transaction (PostgreSQL).
    private static func apply(
        _ group: [Request], at now: Date, mailboxLimit: Int, publisher: MailboxPublisher,
        publishing publication: MailboxPublication,
        on db: any Database
    ) async throws -> GroupResults {
        let sorted = SortedGroup(group)
        var receipts: [Result<MailboxReceipt, any Error>] = []
        if !sorted.sends.isEmpty {
            let submissions = sorted.sends.map(\.submission)
            let locks = MailboxDeviceLocks(
                submissions.flatMap { $0.envelopes.map(\.recipient) }, instance: publisher.hub.instance)
            let directory = try await RecipientDirectory.load(
                users(of: submissions), readingLastCursor: !publisher.database.isPostgres,
                postedPairs: postedPairs(of: submissions), taking: locks, on: db)
            let plan = SendPlan(submissions, directory: directory, at: now, mailboxLimit: mailboxLimit)
            if !plan.entries.isEmpty {
                // The receipts and the conversations ride in the mailbox's insert: two round
                // trips to PostgreSQL fewer per group, each costing more than its statement.
                let posted = try PostedMessageTable.insertions(plan.accepted, on: db)
                let touched = try ConversationTable.touches(plan.conversations, at: now, on: db)
                try await SharedBodyTable.insert(plan.bodies, on: db)
                try await publisher.store(
                    plan.entries, in: db, publishing: publication, lastCursor: directory.lastCursor,
                    alongside: [posted.first, touched.first].compactMap { $0 },
                    foldingCounts: Array(
                        Set(plan.entries.map(\.recipient)).filter {
                            directory.countRows[$0, default: 0] >= MailboxCountTable.foldAt
                        }),
                    holding: directory.locksTaken ? locks : nil)
                try await RelayDatabase.run(posted.dropFirst() + touched.dropFirst(), on: db)
            }
            receipts = plan.results
        }
        var counts: [Int] = []
        if !sorted.acknowledgements.isEmpty {
            counts = try await MailboxTable.delete(sorted.acknowledgements.map { ($0.cursors, $0.address) }, on: db)
        }
        return sorted.results(receipts: receipts, acknowledged: counts)
    }

    /// The same on SQLite, inside the transaction on the relay's own write connection.
    private static func apply(
        _ group: [Request], at now: Date, mailboxLimit: Int, publishing publication: MailboxPublication,
        on connection: SQLiteWriteConnection
    ) throws -> GroupResults {
        let sorted = SortedGroup(group)
        var receipts: [Result<MailboxReceipt, any Error>] = []
        if !sorted.sends.isEmpty {
            let submissions = sorted.sends.map(\.submission)
            let directory = try MailboxWriteStatements.directory(
                users(of: submissions), postedPairs: postedPairs(of: submissions), on: connection)
            let plan = SendPlan(submissions, directory: directory, at: now, mailboxLimit: mailboxLimit)
            if !plan.entries.isEmpty {
                try SharedBodyTable.insert(plan.bodies, on: connection)
                publication.add(
                    try MailboxWriteStatements.insert(plan.entries, after: directory.lastCursor ?? 0, on: connection))
                try MailboxWriteStatements.insertPosted(plan.accepted, on: connection)
                try MailboxWriteStatements.touch(plan.conversations, at: now, on: connection)
            }
            receipts = plan.results
        }
        var counts: [Int] = []
        if !sorted.acknowledgements.isEmpty {
            counts = try MailboxWriteStatements.delete(
                sorted.acknowledgements.map { ($0.cursors, $0.address) }, on: connection)
        }
        return sorted.results(receipts: receipts, acknowledged: counts)
    }

    /// Every user the submissions involve: their recipients and senders.
    private static func users(of submissions: [MailboxSubmission]) -> [UUID] {
        Array(Set(submissions.flatMap { $0.envelopes.map(\.recipient.userID) + [$0.sender.userID] }))
    }

    /// The receipts to look up: of each message (a retry is answered from its first receipt) and
    /// of the message each one must follow.
    private static func postedPairs(of submissions: [MailboxSubmission]) -> [(sender: UUID, message: UUID)] {
        submissions.flatMap { submission in
            [(submission.sender.userID, submission.messageID)]
                + (submission.after.map { [(submission.sender.userID, $0)] } ?? [])
        }
    }
}
