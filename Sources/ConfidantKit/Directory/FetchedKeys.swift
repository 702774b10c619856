import ConfidantCrypto
import Foundation
import Synchronization

/// Users' current devices as last fetched from the relay, and when: what sending uses without
/// asking again for `KeyDirectory.keysFreshFor`.
final class FetchedKeys: Sendable {
    /// Users remembered at most; past it the oldest half is forgotten (they are fetched again).
    static let maximumUsers = 1_000

    private let fetched = Mutex<[UUID: (at: Date, keys: [PublicIdentity])]>([:])

    /// The keys fetched for `user` at `since` or later, if any.
    func keys(of user: UUID, since: Date) -> [PublicIdentity]? {
        fetched.withLock { fetched in
            guard let entry = fetched[user], entry.at >= since else { return nil }
            return entry.keys
        }
    }

    func record(_ keys: [PublicIdentity], of user: UUID, at date: Date) {
        fetched.withLock { fetched in
            if fetched[user] == nil, fetched.count >= Self.maximumUsers {
                let oldest = fetched.sorted { $0.value.at < $1.value.at }.prefix(Self.maximumUsers / 2)
                for (key, _) in oldest { fetched[key] = nil }
            }
            fetched[user] = (date, keys)
        }
    }

    /// The relay said the devices changed: the next send fetches them.
    func forget(_ user: UUID) {
        _ = fetched.withLock { $0.removeValue(forKey: user) }
    }
}
