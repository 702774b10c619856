import ConfidantCrypto
import Foundation
import Synchronization

/// Sessions as last read or written, each with the sealed row it came from. Every message sealed
/// or opened reads its device's session, and opening the row (AES-GCM under the data key) and
/// parsing the record was 5 % of both clients' CPU per message in `relay-load kit` (perf,
/// docs/BENCHMARKS.md). Keyed by the sealed bytes as well as the device, like `ParsedPrekeys`: a
/// row written by a transaction that rolled back, or by another process, differs from the bytes
/// kept here and is opened afresh.
final class OpenedSessions: Sendable {
    /// Devices kept at most; past it the map starts again empty.
    static let maximumDevices = 1_024

    private let opened = Mutex<[DeviceAddress: (fingerprint: String, sealed: Data, record: SessionRecord)]>([:])

    /// The session sealed in `sealed`, opened by `open` unless it is the one read or written last
    /// for the device.
    func session(
        with device: DeviceAddress, fingerprint: String, in sealed: Data, open: (Data) throws -> SessionRecord
    ) throws -> SessionRecord {
        if let known = opened.withLock({ $0[device] }), known.fingerprint == fingerprint, known.sealed == sealed {
            return known.record
        }
        let record = try open(sealed)
        remember(record, with: device, fingerprint: fingerprint, sealed: sealed)
        return record
    }

    /// `record` was just sealed into `sealed` for writing.
    func remember(_ record: SessionRecord, with device: DeviceAddress, fingerprint: String, sealed: Data) {
        opened.withLock { opened in
            if opened.count >= Self.maximumDevices, opened[device] == nil { opened.removeAll(keepingCapacity: true) }
            opened[device] = (fingerprint, sealed, record)
        }
    }

}
