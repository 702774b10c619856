import ConfidantCrypto
import Fluent
import Foundation
import Synchronization

/// When each device was last active, for its own account's device list: written when a request
/// authenticates, at most once per `granularity` per device and instance, so that a busy client
/// costs no write per request. Best effort: a failed write leaves the older time.
final class DeviceActivity: Sendable {
    static let granularity: TimeInterval = 300
    static let capacity = 100_000

    private let database: RelayDatabase
    private let written = Mutex<[DeviceAddress: Date]>([:])

    init(database: RelayDatabase) {
        self.database = database
    }

    /// Records that `caller`'s device is active `now`, unless this instance did so lately.
    func seen(_ caller: Caller, now: Date) async {
        let device = DeviceAddress(userID: caller.userID, deviceID: caller.deviceID)
        let due = written.withLock { written in
            if let last = written[device], now.timeIntervalSince(last) < Self.granularity, last <= now {
                return false
            }
            if written.count >= Self.capacity { written.removeAll(keepingCapacity: true) }
            written[device] = now
            return true
        }
        guard due else { return }
        do {
            try await database.write(singleStatement: true) { db in
                try await DeviceRecord.query(on: db).filter(\.$userID == device.userID)
                    .filter(\.$deviceID == device.deviceID).filter(\.$retiredAt == nil)
                    .set(\.$lastSeenAt, to: now).update()
            }
        } catch {
            _ = written.withLock { $0.removeValue(forKey: device) }
        }
    }
}
