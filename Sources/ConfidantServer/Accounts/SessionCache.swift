import Foundation
import Synchronization

/// Sessions checked in the last few seconds, so that a busy client does not cost a database
/// lookup per request. Sign-out, device removal and account deletion evict at once, here and
/// (through `SessionRevoker`'s notification) on other instances sharing a PostgreSQL database;
/// if a notification is lost, a revoked token keeps working there for at most `lifetime`.
final class SessionCache: Sendable {
    static let lifetime: TimeInterval = 5
    static let capacity = 100_000

    private struct Entry {
        let caller: Caller
        let until: Date
    }
    private let entries = Mutex<[Data: Entry]>([:])

    func caller(for tokenHash: Data, now: Date) -> Caller? {
        entries.withLock { entries in
            guard let entry = entries[tokenHash] else { return nil }
            if entry.until > now { return entry.caller }
            entries[tokenHash] = nil
            return nil
        }
    }

    func remember(_ caller: Caller, for tokenHash: Data, sessionExpires: Date, now: Date) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[tokenHash] = Entry(
                caller: caller, until: min(sessionExpires, now.addingTimeInterval(Self.lifetime)))
        }
    }

    /// Forgets the cached sessions that `revocation` ended.
    func evict(_ revocation: Revocation) {
        entries.withLock { entries in entries = entries.filter { !revocation.covers($0.value.caller) } }
    }
}
