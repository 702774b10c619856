import Foundation
import GRDB

/// When what the store committed is on disk: commits are counted, and the write-ahead log is
/// synced through one when something rests on it (docs/PROTOCOL.md §9.6).
extension LocalStore {
    /// Makes sure commit `number` is on disk: nothing to do when a synced commit followed it (as
    /// one nearly always has), else one synced write — the time, under `meta` — syncs the log
    /// with it.
    func sync(through number: UInt64) throws {
        try syncedWrite(unlessSyncedThrough: number)
    }

    /// Makes sure everything committed to the profile, by this process or another, is on disk.
    func syncAll() throws {
        try syncedWrite(unlessSyncedThrough: nil)
    }

    /// ``sync(through:)`` off the caller's thread and without the connection: the log's file is
    /// synced directly (what a synced write does once it has committed), so reads and writes go
    /// on meanwhile.
    func syncLog(through number: UInt64) async throws {
        if commits.withLock({ $0.synced >= number }) { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            logSyncs.async { continuation.resume(with: Result { try self.syncLogNow(through: number) }) }
        }
    }

    /// Syncs the log within ``backgroundSyncDelay`` and returns at once: for a sent message,
    /// which the relay holds already. Those asked for meanwhile share one sync (one `fdatasync`
    /// for several messages instead of one each). A sync that fails here (the disk failing)
    /// leaves the commit to the next synced write, which meets the same failure and reports it.
    func syncLogSoon(through number: UInt64) {
        if commits.withLock({ $0.synced >= number }) { return }
        let schedule = backgroundSync.withLock { scheduled in
            defer { scheduled = true }
            return !scheduled
        }
        guard schedule else { return }
        logSyncs.asyncAfter(deadline: .now() + Self.backgroundSyncDelay) {
            self.backgroundSync.withLock { $0 = false }
            // Everything committed by now goes with it.
            try? self.syncLogNow(through: self.commits.withLock { $0.count })
        }
    }

    /// Syncs now what waits for a background sync, every commit counted so far with it, and
    /// returns once it is on disk (`Messenger.stopLive`): closing does not wait out the delay. The
    /// scheduled sync then finds nothing left to do. A failure is left, as the background's is,
    /// to the next synced write.
    func backgroundSyncsDone() async {
        try? await syncLog(through: commits.withLock { $0.count })
    }

    /// On `logSyncs` only.
    func syncLogNow(through number: UInt64) throws {
        guard let log else { return }
        if commits.withLock({ $0.synced >= number }) { return }
        // Every commit counted so far is in the log's file: syncing it makes them durable.
        let through = commits.withLock { $0.count }
        guard try log.sync() else {
            // No log while this store's connection is open: not its own, which SQLite keeps as
            // long as a connection is open. Fail closed rather than call anything synced.
            throw ConfidantKitError.storeDamaged("the store's log is missing")
        }
        commits.withLock { $0.synced = max($0.synced, through) }
    }

    /// A write of the time under `meta`, synced: for a deferred commit no synced commit followed
    /// (its sync is the log's, which holds every commit since the last checkpoint).
    func syncedWrite(unlessSyncedThrough number: UInt64?) throws {
        if let number, commits.withLock({ $0.synced >= number }) { return }
        try write(.synced) { db in
            try db.cachedStatement(sql: Self.setMeta).execute(
                arguments: [MetaRecord.Key.syncedAt.rawValue, Data(String(Date().timeIntervalSince1970).utf8)])
        }
    }

    /// How long a background sync waits for company: 100 ms, as the live stream's held
    /// acknowledgements (`HeldAcknowledgements.delay`, which says what 10 ms cost).
    static let backgroundSyncDelay: DispatchTimeInterval = .milliseconds(100)
    /// Makes sure the sessions that this process's sealings read are on disk before their
    /// envelopes leave, when another process on the profile may have written them: their
    /// reservations of message numbers (docs/PROTOCOL.md §9.6) must not be lost to a power cut
    /// once an envelope numbered under them is out. This process's own reservations are synced
    /// by the commit that makes them, but another process's commit is readable here from the
    /// moment it commits, before its own sync of the log is done. So when a transaction of the
    /// protocol stores sees that another connection committed since the last one looked
    /// (`PRAGMA data_version`), the log is synced through it before anything sealed after it
    /// leaves: one `fdatasync` of the log syncs every process's frames in it. The same for a DH
    /// ratchet step this process committed (a received message turned the ratchet): the chain it
    /// starts is born with its reservation, so its first seals commit without a sync, and the
    /// step must be on disk before they leave — usually it is already, by the sync its commit
    /// started in the background. Nothing to do (no sync) while this process is the profile's
    /// only writer and its steps are on disk. Off the caller's thread.
    func syncBeforeSending() async throws {
        try await syncLog(through: syncThroughBeforeSending)
    }

    /// The commit ``syncBeforeSending()`` syncs through: what another process wrote, and the
    /// latest DH ratchet step of this one.
    var syncThroughBeforeSending: UInt64 { sendingSyncPoint.commit }
}
