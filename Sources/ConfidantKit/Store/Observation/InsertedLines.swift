import Foundation
import Synchronization

/// The messages a write transaction inserted, as `LocalStore.insert` built them, for the chats on
/// screen (`ChatLines`): a line a commit inserted is shown as it was written instead of being read
/// back, its body opened again and its attachments looked up.
///
/// Kept only while some chat follows the store, and only for the length of one write
/// transaction (`LocalStore.countedWrite` forgets them once it commits or rolls back): the texts
/// are plaintext. A chat takes a line from here only for a row that its own change events say
/// this transaction inserted and did not change afterwards.
final class InsertedLines: Sendable {
    /// A message as inserted, and its body as sealed in the row (for `OpenedTexts`).
    struct Line: Sendable {
        let message: ChatMessage
        let sealed: Data?
    }

    private let lines = Mutex<[Int64: Line]>([:])
    private let followers = Atomic<Int>(0)

    /// Whether any chat follows the store (then inserts are kept here).
    var isFollowed: Bool { followers.load(ordering: .relaxed) > 0 }

    /// A chat started following the store; every call is paired with ``unfollow()``.
    func follow() { followers.add(1, ordering: .relaxed) }
    func unfollow() { followers.subtract(1, ordering: .relaxed) }

    /// Keeps a message the transaction under way inserted (by its row, its `sequence`).
    func inserted(_ message: ChatMessage, sealed: Data?) {
        lines.withLock { $0[message.sequence] = Line(message: message, sealed: sealed) }
    }

    /// The message inserted as row `sequence` by the transaction under way, if kept.
    func line(_ sequence: Int64) -> Line? { lines.withLock { $0[sequence] } }

    /// Forgets them: the transaction ended.
    func forget() {
        lines.withLock { lines in if !lines.isEmpty { lines = [:] } }
    }
}
