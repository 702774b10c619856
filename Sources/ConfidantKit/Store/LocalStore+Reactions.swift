import ConfidantCrypto
import Foundation
import GRDB

/// Everyone's latest reaction to one message, as sealed in its row: a removal stays as an entry
/// without an emoji, so that an older reaction arriving after it does not come back.
struct StoredReactions: Codable {
    struct Entry: Codable {
        let reactor: UUID
        let emoji: String?
        let at: Date
    }
    var entries: [Entry] = []

    /// Sets `reactor`'s reaction as of `date`; false when theirs is as recent or more.
    mutating func set(_ emoji: String?, by reactor: UUID, at date: Date) -> Bool {
        if let held = entries.first(where: { $0.reactor == reactor }), held.at >= date { return false }
        entries.removeAll { $0.reactor == reactor }
        entries.append(Entry(reactor: reactor, emoji: emoji, at: date))
        return true
    }

    /// The reactions shown: those with an emoji, oldest first.
    var shown: [ChatReaction] {
        entries.compactMap { entry in entry.emoji.map { ChatReaction(emoji: $0, reactor: entry.reactor, at: entry.at) }
        }
        .sorted { ($0.at, $0.reactor.canonicalString) < ($1.at, $1.reactor.canonicalString) }
    }
}

extension LocalStore {
    /// Sets `reactor`'s reaction to message `target` of `conversation` (a peer, or a group):
    /// `emoji`, or none. False when there is no such message (a reaction from outside the
    /// conversation names nothing in it) or the reactor's held reaction is newer.
    func applyReaction(
        _ target: UUID, emoji: String?, by reactor: UUID, conversation: UUID, at date: Date, _ db: Database
    ) throws -> Bool {
        let request = MessageRecord.filter(
            MessageRecord.Columns.messageID == target.canonicalString
                && MessageRecord.Columns.peerID == conversation.canonicalString
                && MessageRecord.Columns.direction != ChatMessage.Direction.notice
                && MessageRecord.Columns.deletedAt == nil)
        guard let record = try request.fetchOne(db) else { return false }
        var reactions = try storedReactions(of: record)
        guard reactions.set(emoji, by: reactor, at: date) else { return false }
        let sealed = try seal(
            try JSONEncoder().encode(reactions),
            .reactions(id: record.messageID, peer: record.peerID, direction: record.direction))
        try MessageRecord.filter(MessageRecord.Columns.seq == record.seq).updateAll(
            db, MessageRecord.Columns.reactions.set(to: sealed))
        return true
    }

    /// The reactions sealed in a message's row.
    func storedReactions(of record: MessageRecord) throws -> StoredReactions {
        guard let sealed = record.reactions else { return StoredReactions() }
        let json = try open(sealed, .reactions(id: record.messageID, peer: record.peerID, direction: record.direction))
        do {
            return try JSONDecoder().decode(StoredReactions.self, from: json)
        } catch {
            throw ConfidantKitError.storeDamaged("a message's reactions do not read (\(error))")
        }
    }
}
