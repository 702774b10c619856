import GRDB
import Synchronization

/// Whether another connection to the profile's database (another process on the profile)
/// committed since this store's transactions of the protocol stores last looked, and the latest
/// commit of this store that may have read what it wrote (`LocalStore.syncBeforeSending`).
/// Looked at on the store's one connection, inside its write transactions.
final class OtherWriters: Sendable {
    /// The profile's data version as last looked at by a transaction that committed (nil before
    /// the first: what another process wrote before this store opened counts as new), and the
    /// commit to sync through before anything sealed after it leaves.
    private let state = Mutex<(dataVersion: Int64?, syncBefore: UInt64)>((nil, 0))

    /// The profile's data version (`PRAGMA data_version`) when another connection committed
    /// since the last look; nil when none did. Inside a write transaction: nothing else commits
    /// before it ends.
    func versionIfChanged(_ db: Database) throws -> Int64? {
        let version = try db.dataVersion()
        return state.withLock { $0.dataVersion == version ? nil : version }
    }

    /// The transaction that saw `version` (from ``versionIfChanged(_:)``) committed as `commit`:
    /// what it read of another process is synced before anything it sealed leaves. Only once
    /// committed: a transaction rolled back (and run again) looks again.
    func committed(_ commit: UInt64, seen version: Int64?) {
        guard let version else { return }
        state.withLock { state in
            state.dataVersion = version
            state.syncBefore = max(state.syncBefore, commit)
        }
    }

    /// The commit to sync through before an envelope leaves (0: none).
    var syncBeforeSending: UInt64 { state.withLock { $0.syncBefore } }
}
