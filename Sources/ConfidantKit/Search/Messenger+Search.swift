import Foundation

/// Search over this device's own messages: their texts and files' names, through an index of
/// keyed hashes (``SearchTerms``) that holds no word in clear.
extension Messenger {
    /// The messages holding every word of `query` — or a word it begins, for a query word of 3
    /// or more characters ("meet" finds "meeting"; case, accents and width do not count) — in
    /// `conversation` (a contact's or a group's id) or in all, the most recently stored on this
    /// device first, at most `limit` (1 to 500). Messages stored before the index existed
    /// (``searchBacklog()``) are found once ``indexEarlierMessagesForSearch(progress:)`` has run.
    public func search(_ query: String, in conversation: UUID? = nil, limit: Int = 50) throws -> [SearchHit] {
        let limit = min(max(limit, 1), 500)
        return try store.read { db in try store.search(query, in: conversation, limit: limit, db) }
    }

    /// How many messages stored before this version's search index wait to be indexed.
    public func searchBacklog() throws -> Int {
        try store.read { db in try store.searchBacklog(db) }
    }

    /// Indexes the messages stored before the search index existed, newest first, 500 to a
    /// transaction, calling `progress` with how many are left after each; done once per profile.
    public func indexEarlierMessagesForSearch(progress: (Int) -> Void = { _ in }) throws {
        guard try searchBacklog() > 0 else { return }
        while true {
            let left = try store.backfillSearchIndex()
            progress(left)
            if left == 0 { return }
        }
    }

    /// How many lines of its conversation `message` and those after it make: how far back a chat
    /// must show to reach it (a search result's link opens the chat that far).
    public func linesSince(_ message: ChatMessage) throws -> Int {
        try store.read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM message WHERE peer_id = ? AND seq >= ?",
                arguments: [message.peer.canonicalString, message.sequence]) ?? 0
        }
    }
}
