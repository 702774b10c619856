import Foundation
import Synchronization

/// Sessions checked in the last few seconds, so that a busy client does not cost a database
/// lookup per request. Sign-out, device removal and account deletion on this instance evict at
/// once; on another instance sharing the database, a revoked token keeps working for at most
/// `lifetime` (docs/SECURITY.md).
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

    /// Forgets every cached session of `userID` (or only of one of its devices).
    func evict(userID: UUID, deviceID: UUID? = nil) {
        entries.withLock { entries in
            entries = entries.filter {
                $0.value.caller.userID != userID || (deviceID != nil && $0.value.caller.deviceID != deviceID)
            }
        }
    }
}
