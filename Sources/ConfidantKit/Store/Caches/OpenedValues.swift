import Foundation
import Synchronization

/// Values of sealed rows as last opened or written, each with the sealed bytes it came from, so
/// that a row read again with the same bytes is not opened (AES-GCM under the data key) and
/// parsed again: every message sealed or opened reads its device's session, and every send its
/// contact, and every received message the device's prekeys. Answered only for
/// the same bytes: a row written by a transaction that rolled back, or by another process,
/// differs from the bytes kept here and is opened afresh.
final class OpenedValues<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Values kept at most; past it the map starts again empty.
    let maximumCount: Int

    private let opened = Mutex<[Key: (sealed: Data, value: Value)]>([:])

    init(maximumCount: Int) {
        self.maximumCount = maximumCount
    }

    /// The value sealed in `sealed`, opened by `open` unless it is the one read or written last
    /// under `key`.
    func value(for key: Key, in sealed: Data, open: (Data) throws -> Value) throws -> Value {
        if let known = opened.withLock({ $0[key] }), known.sealed == sealed { return known.value }
        let value = try open(sealed)
        remember(value, for: key, sealed: sealed)
        return value
    }

    /// `value` was just sealed into `sealed` for writing.
    func remember(_ value: Value, for key: Key, sealed: Data) {
        opened.withLock { opened in
            if opened.count >= maximumCount, opened[key] == nil { opened.removeAll(keepingCapacity: true) }
            opened[key] = (sealed, value)
        }
    }
}
