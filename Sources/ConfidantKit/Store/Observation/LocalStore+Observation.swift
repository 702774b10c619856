import Foundation
import GRDB

/// Values that follow the store: each starts with the current value and yields again whenever a
/// transaction changes what it reads (GRDB's `ValueObservation`), so screens update themselves.
extension LocalStore {
    func observe<Value: Sendable & Equatable>(_ fetch: @escaping @Sendable (Database) throws -> Value)
        -> AsyncThrowingStream<Value, any Error>
    {
        var tracking = ValueObservation.tracking(fetch).removeDuplicates()
        // Fetched in a plain transaction, as `LocalStore.read` reads: GRDB's read-only mode sets
        // `PRAGMA query_only` around each fetch, and SQLite then expires every prepared statement
        // of the connection, so each screen update made the message path compile its statements
        // again. The fetches only read.
        tracking.requiresWriteAccess = true
        let observation = tracking
        let database = database
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await value in observation.values(in: database) { continuation.yield(value) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension Messenger {
    /// The conversations, most recent first, now and after every change.
    public nonisolated func conversationUpdates() -> AsyncThrowingStream<[ConversationSummary], any Error> {
        let store = store
        return store.observe { db in try store.conversations(db) }
    }

    /// The last `limit` lines with a peer, oldest first, now and after every change (new
    /// messages, delivery states, read marks).
    public nonisolated func historyUpdates(with peer: UUID, limit: Int = 200) -> AsyncThrowingStream<
        [ChatMessage], any Error
    > {
        // Only the rows each commit changed are read again (`ChatLines`).
        ChatLines.updates(in: store, with: peer, limit: limit)
    }

    /// Notices about the account itself that were not seen yet (a new device signed in to it),
    /// newest first, now and after every change.
    public func accountNoticeUpdates() -> AsyncThrowingStream<[ChatMessage], any Error> {
        let store = store
        let me = account.userID
        return store.observe { db in try store.accountNotices(of: me, db) }
    }
}
