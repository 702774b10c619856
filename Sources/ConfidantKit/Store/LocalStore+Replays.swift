import ConfidantCrypto
import Foundation
import GRDB

/// What a relay could hand this device again (docs/PROTOCOL.md §8, "Replays"). A session message
/// (v2) opens once: its ratchet refuses a second copy. A one-shot envelope (v1) opens as often as
/// it comes, so what it carries is applied at most once: a message by its row (or, once it is
/// gone, by its id kept here), a control message by its id kept here; and nothing older than
/// ``replayWindow`` is applied at all, since by then its id may be forgotten.
extension LocalStore {
    /// How long a message may be on its way (the relay keeps an entry 30 days at most), and so
    /// how long the ids of applied controls and vanished messages are kept.
    static let replayWindow: TimeInterval = 60 * 86_400

    /// Records that `sender`'s message `id` is being applied now; false when it was seen before
    /// (a replay, applied already).
    func firstSight(of id: UUID, from sender: UUID, at now: Date, _ db: Database) throws -> Bool {
        try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO seen_envelope (sender_id, message_id, seen_at) VALUES (?, ?, ?)"
        ).execute(arguments: [sender.canonicalString, id.canonicalString, now.timeIntervalSince1970])
        return db.changesCount > 0
    }

    /// Whether `sender`'s message `id` was applied here before and is gone (it expired).
    func wasSeen(_ id: UUID, from sender: UUID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(
                sql: "SELECT EXISTS (SELECT 1 FROM seen_envelope WHERE sender_id = ? AND message_id = ?)"),
            arguments: [sender.canonicalString, id.canonicalString]) ?? false
    }

    /// Whether a message sent at `sentAt` is too old to be applied now (see ``replayWindow``).
    static func isTooOld(_ sentAt: Date, now: Date) -> Bool {
        sentAt < now.addingTimeInterval(-replayWindow)
    }

    /// Forgets the ids seen longer ago than ``replayWindow``.
    func forgetSeen(before now: Date, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM seen_envelope WHERE seen_at < ?").execute(
            arguments: [now.addingTimeInterval(-Self.replayWindow).timeIntervalSince1970])
    }
}
