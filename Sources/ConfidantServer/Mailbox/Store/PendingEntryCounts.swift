import ConfidantCrypto

/// How many entries wait in each device's mailbox, as the relay's own SQLite write connection
/// knows them: counted once per device, then kept from that connection's own inserts and
/// deletes, and forgotten whenever another connection has committed (retention, a retired device
/// or a deleted account remove entries there).
///
/// Every send checks its recipients' mailboxes against the limit. Counting the entries is a walk
/// of the device's whole index range, so a send to a device that is away for long (100,000
/// entries allowed) would cost milliseconds of the one write thread that every other send waits
/// behind.
///
/// Changes made in a transaction count only once it commits (`committed()`); a rollback drops
/// them (`rolledBack()`). Not thread-safe: the write connection that owns it is used by one
/// thread at a time.
final class PendingEntryCounts {
    /// Devices kept at most; past it the counts start again empty (each is counted again once).
    let maximumDevices: Int

    /// Committed counts.
    private var counts: [DeviceAddress: Int] = [:]
    /// Changes of the transaction under way, by device.
    private var staged: [DeviceAddress: Int] = [:]
    /// The connection's `PRAGMA data_version` when the counts were last known good: another
    /// connection's commit changes it.
    private var dataVersion: Int64?

    init(maximumDevices: Int = 65_536) {
        self.maximumDevices = maximumDevices
    }

    /// Forgets every count when `version` (`PRAGMA data_version`, read inside the transaction
    /// under way) shows that another connection committed since the counts were last checked.
    func check(dataVersion version: Int64) {
        if dataVersion != version {
            counts.removeAll(keepingCapacity: true)
            dataVersion = version
        }
    }

    /// The device's entries as this transaction sees them, or nil when they must be counted.
    func count(of device: DeviceAddress) -> Int? {
        counts[device].map { $0 + staged[device, default: 0] }
    }

    /// `count` entries were counted for the device in this transaction, its own changes included.
    func counted(_ count: Int, for device: DeviceAddress) {
        if counts.count >= maximumDevices, counts[device] == nil { counts.removeAll(keepingCapacity: true) }
        counts[device] = count - staged[device, default: 0]
    }

    /// The transaction under way inserted (`change` > 0) or deleted (< 0) the device's entries.
    func add(_ change: Int, for device: DeviceAddress) {
        staged[device, default: 0] += change
    }

    /// The transaction committed: its changes count.
    func committed() {
        for (device, change) in staged {
            // A device not counted yet is counted when next asked for, with these changes in it.
            // Below zero would be a count gone wrong: it is counted again instead.
            guard let count = counts[device] else { continue }
            counts[device] = count + change >= 0 ? count + change : nil
        }
        staged.removeAll(keepingCapacity: true)
    }

    /// The transaction rolled back: its changes never happened.
    func rolledBack() {
        staged.removeAll(keepingCapacity: true)
    }
}
