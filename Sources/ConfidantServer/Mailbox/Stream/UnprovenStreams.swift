import ConfidantAPI
import Synchronization

/// Streams that have not proven their device's key yet, per client address: a stolen token
/// without the device key could otherwise hold any number of sockets open for the proof's time
/// limit each.
final class UnprovenStreams: Sendable {
    /// Unproven streams one address may have at once on an instance.
    static let maximumPerAddress = 64

    private let counts = Mutex<[String: Int]>([:])

    /// Counts a new stream from `address`, or refuses it (429) when the address has its fill.
    func take(_ address: String) throws(APIFailure) {
        let taken = counts.withLock { counts -> Bool in
            guard counts[address, default: 0] < Self.maximumPerAddress else { return false }
            counts[address, default: 0] += 1
            return true
        }
        guard taken else {
            throw APIFailure(
                .rateLimited, "Too many streams from this address are waiting to prove their devices.", retryAfter: 15)
        }
    }

    /// The stream from `address` proved its key, or ended without: it no longer counts.
    func give(_ address: String) {
        counts.withLock { counts in
            counts[address, default: 1] -= 1
            if counts[address, default: 0] <= 0 { counts[address] = nil }
        }
    }

    /// Unproven streams from `address` now.
    func count(_ address: String) -> Int { counts.withLock { $0[address, default: 0] } }
}

/// Runs its work once, whoever calls first.
final class ReleaseOnce: Sendable {
    private let work: Mutex<(@Sendable () -> Void)?>

    init(_ work: @escaping @Sendable () -> Void) { self.work = Mutex(work) }

    @Sendable func run() {
        work.withLock { work in
            defer { work = nil }
            return work
        }?()
    }
}
