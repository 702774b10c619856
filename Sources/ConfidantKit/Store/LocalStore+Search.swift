import ConfidantCrypto
import Foundation
import GRDB

/// The search index (`search_token`): for each message, keyed hashes of the prefixes of its words
/// (``SearchTerms``, ``LocalDataKey/searchToken(_:)``), never the words. Kept in the transaction
/// that stores, edits or deletes the message (triggers drop a deleted message's rows); messages
/// stored before the index existed are indexed by ``backfillSearchIndex(batch:)``.
extension LocalStore {
    /// Indexes message `sequence` for its text and its files' names; with `replacing`, drops what
    /// the index held for it first (an edit).
    func indexForSearch(_ sequence: Int64, texts: [String], replacing: Bool = false, _ db: Database) throws {
        if replacing {
            try db.cachedStatement(sql: "DELETE FROM search_token WHERE seq = ?").execute(arguments: [sequence])
        }
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO search_token (token, seq) VALUES (?, ?)")
        for key in SearchTerms.indexKeys(of: texts) {
            try insert.execute(arguments: [dataKey.searchToken(key), sequence])
        }
    }

    /// How many messages stored before the index existed wait to be indexed.
    func searchBacklog(_ db: Database) throws -> Int {
        guard let below = try Int64.fetchOne(db, sql: "SELECT below FROM search_backfill") else { return 0 }
        return try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM message WHERE seq < ? AND direction != ?",
            arguments: [below, ChatMessage.Direction.notice]) ?? 0
    }

    /// Indexes up to `batch` of the messages stored before the index existed, newest first, in one
    /// transaction; returns how many are left.
    func backfillSearchIndex(batch: Int = 500) throws -> Int {
        try write(.deferred) { db in
            guard let below = try Int64.fetchOne(db, sql: "SELECT below FROM search_backfill") else { return 0 }
            let records = try MessageRecord.fetchAll(
                db, sql: "SELECT * FROM message WHERE seq < ? AND direction != ? ORDER BY seq DESC LIMIT ?",
                arguments: [below, ChatMessage.Direction.notice, batch])
            guard let lowest = records.last?.seq else {
                try db.execute(sql: "DELETE FROM search_backfill")
                return 0
            }
            for message in try chatMessages(records, db) {
                try indexForSearch(message.sequence, texts: Self.searchTexts(of: message), replacing: true, db)
            }
            try db.execute(sql: "UPDATE search_backfill SET below = ?", arguments: [lowest])
            let left = try searchBacklog(db)
            if left == 0 { try db.execute(sql: "DELETE FROM search_backfill") }
            return left
        }
    }

    /// What a message is found by: its text and its files' names (not a deleted one's).
    static func searchTexts(of message: ChatMessage) -> [String] {
        guard !message.isDeleted else { return [] }
        return (message.text.map { [$0] } ?? []) + message.attachments.map(\.name)
    }

    /// The newest messages, in `conversation` if given, holding every word of `query` (or a word
    /// it begins), newest first: at most `limit`.
    func search(_ query: String, in conversation: UUID?, limit: Int, _ db: Database) throws -> [SearchHit] {
        let words = SearchTerms.queryWords(query)
        guard !words.isEmpty, limit > 0 else { return [] }
        let tokens = words.map { dataKey.searchToken(SearchTerms.lookupKey(of: $0)) }
        // The first word's rows, newest first, each kept when the others' rows name it too (a
        // primary-key lookup each); pages of candidates until `limit` messages check out.
        var sql = "SELECT t0.seq FROM search_token t0"
        if conversation != nil { sql += " JOIN message m ON m.seq = t0.seq AND m.peer_id = ?" }
        sql += " WHERE t0.token = ? AND t0.seq < ?"
        for index in tokens.indices.dropFirst() {
            sql +=
                " AND EXISTS (SELECT 1 FROM search_token t\(index) WHERE t\(index).token = ? AND t\(index).seq = t0.seq)"
        }
        sql += " ORDER BY t0.seq DESC LIMIT ?"
        let statement = try db.cachedStatement(sql: sql)
        let page = max(limit, 50)
        var hits: [SearchHit] = []
        var before = Int64.max
        while hits.count < limit {
            var arguments: [any DatabaseValueConvertible] = conversation.map { [$0.canonicalString] } ?? []
            arguments += [tokens[0], before]
            arguments += tokens.dropFirst().map { $0 as any DatabaseValueConvertible }
            arguments.append(page)
            let sequences = try Int64.fetchAll(statement, arguments: StatementArguments(arguments))
            guard let last = sequences.last else { break }
            before = last
            let records = try MessageRecord.fetchAll(
                db, sql: "SELECT * FROM message WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq DESC",
                arguments: [String(decoding: try JSONEncoder().encode(sequences), as: UTF8.self)])
            for message in try chatMessages(records, db) where hits.count < limit {
                let texts = Self.searchTexts(of: message)
                guard SearchTerms.matches(words, in: texts) else { continue }
                hits.append(SearchHit(message: message, excerpt: SearchHit.excerpt(of: texts, around: words)))
            }
            if sequences.count < page { break }
        }
        return hits
    }
}
