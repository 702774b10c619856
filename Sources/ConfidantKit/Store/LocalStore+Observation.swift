import Foundation
import GRDB

/// Values that follow the store: each starts with the current value and yields again whenever a
/// transaction changes what it reads (GRDB's `ValueObservation`), so screens update themselves.
extension LocalStore {
    func observe<Value: Sendable & Equatable>(_ fetch: @escaping @Sendable (Database) throws -> Value)
        -> AsyncThrowingStream<Value, any Error>
    {
        let observation = ValueObservation.tracking(fetch).removeDuplicates()
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
        let store = store
        return store.observe { db in try store.history(with: peer, limit: limit, db) }
    }

    /// Notices about the account itself that were not seen yet (a new device signed in to it),
    /// newest first, now and after every change.
    public func accountNoticeUpdates() -> AsyncThrowingStream<[ChatMessage], any Error> {
        let store = store
        let me = account.userID
        return store.observe { db in try store.accountNotices(of: me, db) }
    }
}
