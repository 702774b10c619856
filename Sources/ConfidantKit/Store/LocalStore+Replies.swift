import ConfidantCrypto
import Foundation
import GRDB

extension LocalStore {
    /// The quote a message's row carries, opened; nil for a message that answers none.
    func replyQuote(of record: MessageRecord) throws -> ReplyQuote? {
        guard let target = record.replyTo, let sealed = record.replyExcerpt else { return nil }
        let excerpt = try open(
            sealed, .replyExcerpt(id: record.messageID, peer: record.peerID, direction: record.direction))
        return ReplyQuote(messageID: target, excerpt: String(decoding: excerpt, as: UTF8.self))
    }

    /// Marks the replies among `messages` whose message is not in their conversation here, or was
    /// deleted for everyone (one query for all of them).
    func markGoneReplyTargets(_ messages: inout [ChatMessage], _ db: Database) throws {
        let replies = messages.indices.filter { messages[$0].reply != nil }
        guard !replies.isEmpty else { return }
        var pairs: [[String]] = []
        for index in replies {
            guard let reply = messages[index].reply else { continue }
            pairs.append([messages[index].peer.canonicalString, reply.messageID.canonicalString])
        }
        let json = String(decoding: try JSONEncoder().encode(pairs), as: UTF8.self)
        let live = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT m.peer_id, m.message_id FROM message m
                    JOIN json_each(?) j ON m.peer_id = json_extract(j.value, '$[0]') AND m.message_id = json_extract(j.value, '$[1]')
                    WHERE m.direction != ? AND m.deleted_at IS NULL
                    """), arguments: [json, ChatMessage.Direction.notice]
        ).map { "\($0["peer_id"] as String)|\($0["message_id"] as String)" }
        let present = Set(live)
        for index in replies {
            guard let reply = messages[index].reply else { continue }
            let key = "\(messages[index].peer.canonicalString)|\(reply.messageID.canonicalString)"
            messages[index].replyTargetGone = !present.contains(key)
        }
    }

    /// Touches the rows of the replies to `target` in `conversation`, so that an open chat reads
    /// them again (and shows their quote as of a deleted message).
    func touchReplies(to target: UUID, in conversation: UUID, _ db: Database) throws {
        try db.cachedStatement(sql: "UPDATE message SET reply_to = reply_to WHERE peer_id = ? AND reply_to = ?")
            .execute(arguments: [conversation.canonicalString, target.canonicalString])
    }
}
