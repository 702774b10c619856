import ConfidantCrypto
import Foundation
import GRDB
import Synchronization

/// The latest lines of one chat, kept up to date from the rows each commit changed.
///
/// Not GRDB's `ValueObservation`, which fetches all of them (200 for a chat screen) after every
/// commit that touches the message table, on the store's writer before the commit returns. This
/// observer hears from SQLite which rows each transaction inserted, updated or deleted (GRDB's transaction
/// observer, SQLite's update hook) and reads only those of them that are this chat's.
///
/// What a commit can change and how each is followed:
/// - a message row inserted or updated: read again if it is this peer's and in view (the `message`
///   table's rowid is its `seq`) — unless the transaction inserted it as `LocalStore.insert` built
///   it and did not change it afterwards (`InsertedLines`): then it is shown as it was written;
/// - an attachment row inserted or updated: its message is read again;
/// - a line in view deleted, an attachment deleted, or a change SQLite does not describe: the
///   lines are fetched afresh, as a first fetch does (older lines come into view then). A pending
///   line's retry time and reason live in the outbox, a WITHOUT ROWID table whose rows SQLite does
///   not report: the deferral that changes them says so with `Database.notifyChanges`, a change
///   SQLite does not describe. (Queueing, sending and receipts change the message rows too.)
///
/// Every stored property is touched only on the store's writer: GRDB calls a transaction
/// observer there, and `start` runs in a write. The stream's continuation is `Sendable`, and
/// `stopped` is atomic.
final class ChatLines: TransactionObserver, @unchecked Sendable {
    private let store: LocalStore
    private let peer: UUID
    private let limit: Int
    private let continuation: AsyncThrowingStream<[ChatMessage], any Error>.Continuation
    /// The texts the lines opened, so that a line read again for a new state is not opened again.
    let texts = OpenedTexts()
    private let stopped = Atomic<Bool>(false)
    /// The first fetch, cancelled if it has not run when the stream ends. (The task, not a closure
    /// that cancels it: a closure held in a `Mutex` is wrapped in two more thunks at every
    /// `withLock`, see `MailboxInbox` in ConfidantServer.)
    private let firstFetch = Mutex<Task<Void, Never>?>(nil)

    /// The lines last yielded, oldest first.
    private(set) var lines: [ChatMessage] = []
    /// What the transaction under way changed.
    private var changes = Changes()
    /// How many commits were followed by reading only their rows, and how many by a whole fetch,
    /// for the tests.
    private(set) var partialFetches = 0
    private(set) var wholeFetches = 0
    /// How many lines were shown as their transaction inserted them, not read back, for the tests.
    private(set) var linesAsInserted = 0

    /// Rows a transaction changed, by the `rowid` SQLite reported.
    private struct Changes {
        var messages = Set<Int64>()
        /// Message rows inserted and not changed since (each also in `messages`).
        var inserted = Set<Int64>()
        var deletedMessages = Set<Int64>()
        var attachments = Set<Int64>()
        /// Something that says nothing of its rows (an attachment deleted, a change GRDB was told of).
        var unknown = false

        var isEmpty: Bool { messages.isEmpty && deletedMessages.isEmpty && attachments.isEmpty && !unknown }
    }

    private init(
        store: LocalStore, peer: UUID, limit: Int,
        continuation: AsyncThrowingStream<[ChatMessage], any Error>.Continuation
    ) {
        self.store = store
        self.peer = peer
        self.limit = limit
        self.continuation = continuation
    }

    /// The last `limit` lines with `peer`, now and after every commit that changes them. A screen
    /// that falls behind gets the latest lines, not every state in between.
    static func updates(in store: LocalStore, with peer: UUID, limit: Int) -> AsyncThrowingStream<
        [ChatMessage], any Error
    > {
        let (observer, stream) = make(in: store, with: peer, limit: limit)
        let start = Task {
            do {
                try await store.database.writeWithoutTransaction { db in try observer.start(db) }
            } catch {
                observer.continuation.finish(throwing: error)
            }
        }
        observer.firstFetch.withLock { $0 = start }
        return stream
    }

    /// ``updates(in:with:limit:)`` with the first fetch done before it returns, and the observer,
    /// for the tests.
    static func started(in store: LocalStore, with peer: UUID, limit: Int) throws -> (
        ChatLines, AsyncThrowingStream<[ChatMessage], any Error>
    ) {
        let (observer, stream) = make(in: store, with: peer, limit: limit)
        try store.database.writeWithoutTransaction { db in try observer.start(db) }
        return (observer, stream)
    }

    private static func make(in store: LocalStore, with peer: UUID, limit: Int) -> (
        ChatLines, AsyncThrowingStream<[ChatMessage], any Error>
    ) {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: [ChatMessage].self, bufferingPolicy: .bufferingNewest(1))
        let observer = ChatLines(store: store, peer: peer, limit: max(1, limit), continuation: continuation)
        store.insertedLines.follow()
        // The stream holds the observer; the store holds it weakly (GRDB's `.observerLifetime`)
        // and forgets it when the stream ends.
        continuation.onTermination = { _ in
            store.insertedLines.unfollow()
            observer.stopped.store(true, ordering: .relaxed)
            observer.firstFetch.withLock { $0 }?.cancel()
            store.database.asyncWriteWithoutTransaction { db in db.remove(transactionObserver: observer) }
        }
        return (observer, stream)
    }

    /// The first fetch, and observation from the next commit on (both on the writer, so nothing
    /// commits in between).
    func start(_ db: Database) throws {
        guard !stopped.load(ordering: .relaxed) else { return }
        _ = try wholeFetch(db)
        continuation.yield(lines)  // the first lines, even none
        db.add(transactionObserver: self, extent: .observerLifetime)
    }

    // MARK: TransactionObserver

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        switch eventKind.tableName {
        case "message", "attachment", "outbox": true
        default: false
        }
    }

    func databaseDidChange(with event: DatabaseEvent) {
        switch (event.tableName, event.kind) {
        case ("message", .delete):
            changes.deletedMessages.insert(event.rowID)
            changes.inserted.remove(event.rowID)
        case ("message", .insert):
            changes.messages.insert(event.rowID)
            changes.inserted.insert(event.rowID)
        case ("message", _):
            changes.messages.insert(event.rowID)
            changes.inserted.remove(event.rowID)
        // Once its row is gone there is no telling which message it was.
        case ("attachment", .delete): changes.unknown = true
        case ("attachment", _): changes.attachments.insert(event.rowID)
        // The outbox (WITHOUT ROWID) reports no rows; were it to, nothing says which line it is.
        default: changes.unknown = true
        }
    }

    func databaseDidChange() { changes.unknown = true }

    func databaseDidCommit(_ db: Database) {
        // Taken first: reading below must find nothing pending if it ends a transaction itself.
        let committed = changes
        changes = Changes()
        guard !committed.isEmpty, !stopped.load(ordering: .relaxed) else { return }
        do {
            guard try refresh(after: committed, db) else { return }
            continuation.yield(lines)
        } catch {
            stopped.store(true, ordering: .relaxed)
            continuation.finish(throwing: error)
        }
    }

    func databaseDidRollback(_ db: Database) { changes = Changes() }

    // MARK: Reading what changed

    /// Brings `lines` up to date with what a commit changed; whether they changed. Lines are
    /// replaced and added in place, and compared one by one only where a row changed: the chat
    /// holds 200 of them, and copying and comparing them all for each message that arrived was
    /// most of what following a commit cost once new lines were no longer read back.
    private func refresh(after changes: Changes, _ db: Database) throws -> Bool {
        guard !changes.unknown, !changes.deletedMessages.contains(where: { index(of: $0) != nil }) else {
            return try wholeFetch(db)
        }
        var candidates = changes.messages
        var asInserted = changes.inserted
        if !changes.attachments.isEmpty {
            // A message whose attachments changed is read back with them.
            let owners = try messages(owning: changes.attachments, db)
            candidates.formUnion(owners)
            asInserted.subtract(owners)
        }
        // While the chat is full, lines older than its first stay out of view.
        if lines.count == limit, let first = lines.first?.sequence { candidates = candidates.filter { $0 >= first } }
        guard !candidates.isEmpty else { return false }

        // New rows as written: a pending one is read back for its place in the outbox.
        var known: [InsertedLines.Line] = []
        for sequence in asInserted where candidates.contains(sequence) {
            guard let line = store.insertedLines.line(sequence), line.message.status != .pending else { continue }
            candidates.remove(sequence)
            if line.message.peer == peer { known.append(line) }
        }
        guard let fetched = try candidates.isEmpty ? [] : readLines(candidates, db) else { return try wholeFetch(db) }
        for line in known {
            if let text = line.message.text, let sealed = line.sealed {
                texts.remember(line.message.sequence, sealed: sealed, text: text)
            }
        }
        linesAsInserted += known.count
        partialFetches += 1
        var changed = false
        var added: [ChatMessage] = []
        for message in fetched + known.map(\.message) {
            if let index = index(of: message.sequence) {
                if lines[index] != message {
                    lines[index] = message
                    changed = true
                }
            } else {
                added.append(message)
            }
        }
        guard !added.isEmpty else { return changed }
        // New rows have the highest numbers (`seq` is AUTOINCREMENT); sorted anyway.
        added.sort { $0.sequence < $1.sequence }
        let inOrder = lines.last.map { last in added[0].sequence > last.sequence } ?? true
        lines += added
        if !inOrder { lines.sort { $0.sequence < $1.sequence } }
        if lines.count > limit {
            let scrolledOut = lines.prefix(lines.count - limit).map(\.sequence)
            lines.removeFirst(lines.count - limit)
            texts.forget(scrolledOut)
        }
        return true
    }

    /// The lines `candidates` names that are this chat's, read back; nil when a line in view is
    /// no longer this chat's (not something the store does), which calls for a whole fetch.
    private func readLines(_ candidates: Set<Int64>, _ db: Database) throws -> [ChatMessage]? {
        let records = try MessageRecord.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT * FROM message WHERE peer_id = ? AND seq IN (SELECT value FROM json_each(?)) ORDER BY seq
                    """),
            arguments: [peer.canonicalString, Self.jsonArray(candidates)])
        let read = Set(records.compactMap(\.seq))
        guard !candidates.contains(where: { !read.contains($0) && index(of: $0) != nil }) else { return nil }
        return try store.chatMessages(records, db, texts: texts, partial: true)
    }

    /// Where line `sequence` is in `lines` (ordered by sequence), if it is in view.
    private func index(of sequence: Int64) -> Int? {
        var low = 0
        var high = lines.count
        while low < high {
            let middle = (low + high) / 2
            if lines[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low < lines.count && lines[low].sequence == sequence ? low : nil
    }

    /// The lines fetched afresh, as a first fetch does; whether they changed.
    private func wholeFetch(_ db: Database) throws -> Bool {
        wholeFetches += 1
        let fetched = try store.history(with: peer, limit: limit, db, texts: texts)
        guard fetched != lines else { return false }
        lines = fetched
        return true
    }

    /// The `seq` of the messages that own these attachment rows.
    private func messages(owning attachments: Set<Int64>, _ db: Database) throws -> Set<Int64> {
        Set(
            try Int64.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT m.seq FROM attachment AS a
                        JOIN message AS m
                            ON m.message_id = a.message_id AND m.peer_id = a.peer_id AND m.direction = a.direction
                        WHERE a.rowid IN (SELECT value FROM json_each(?))
                        """),
                arguments: [Self.jsonArray(attachments)]))
    }

    /// Numbers as one bound JSON array, so that each statement is prepared once whatever the count.
    private static func jsonArray(_ numbers: Set<Int64>) -> String {
        "[" + numbers.map(String.init).joined(separator: ",") + "]"
    }
}
