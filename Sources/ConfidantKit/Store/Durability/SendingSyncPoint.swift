import GRDB
import Synchronization

/// The commit the log is synced through before anything sealed from now on leaves
/// (`LocalStore.syncBeforeSending`): the latest commit of this store that read what another
/// connection to the profile's database (another process on the profile) wrote, or that made a
/// DH ratchet step. Whether another connection committed is looked at on the store's one
/// connection, inside its write transactions of the protocol stores.
final class SendingSyncPoint: Sendable {
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

    /// A transaction committed as `commit`. When it saw `version` (from ``versionIfChanged(_:)``),
    /// what it read of another process is synced before anything it sealed leaves; when it
    /// `startedChain` (a DH ratchet step), the step is synced before anything sealed on that
    /// chain leaves. Only once committed: a transaction rolled back (and run again) looks again.
    func committed(_ commit: UInt64, seen version: Int64?, startedChain: Bool) {
        guard version != nil || startedChain else { return }
        state.withLock { state in
            if let version { state.dataVersion = version }
            state.syncBefore = max(state.syncBefore, commit)
        }
    }

    /// The commit to sync through before an envelope leaves (0: none).
    var commit: UInt64 { state.withLock { $0.syncBefore } }
}
