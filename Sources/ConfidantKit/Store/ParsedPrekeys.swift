import ConfidantCrypto
import Foundation
import Synchronization

/// The device's prekeys as last read or written, with the sealed row they came from. Parsing
/// them makes every private key again, which derives its public half (a scalar multiplication
/// for each of 100 and more one-time prekeys), and every received message's transaction reads
/// them: that was a quarter of the clients' CPU in `relay-load kit` (perf; docs/BENCHMARKS.md). Keyed
/// by the sealed bytes, so a row written by a transaction that rolled back, or by another
/// process, is never answered from here.
final class ParsedPrekeys: Sendable {
    private let last = Mutex<(sealed: Data, prekeys: DevicePrekeys)?>(nil)

    /// The prekeys in `sealed`, parsed by `parse` unless they are the ones parsed or written last.
    func prekeys(in sealed: Data, parse: (Data) throws -> DevicePrekeys) throws -> DevicePrekeys {
        if let known = last.withLock({ $0 }), known.sealed == sealed { return known.prekeys }
        let prekeys = try parse(sealed)
        remember(prekeys, sealed: sealed)
        return prekeys
    }

    /// `prekeys` were just sealed into `sealed` for writing.
    func remember(_ prekeys: DevicePrekeys, sealed: Data) {
        last.withLock { $0 = (sealed, prekeys) }
    }
}
