import ConfidantCrypto
import Foundation
import Synchronization

/// Whether a stream's client proved that it holds its device's key: decided once, by its first
/// frame (the signature of the stream's challenge) or by the time limit running out.
final class StreamProof: Sendable {
    private enum State {
        case pending(CheckedContinuation<Bool, Never>?)
        case decided(Bool)
    }
    private let state = Mutex(State.pending(nil))
    /// The 32 random bytes the client signs (purpose `stream`, docs/PROTOCOL.md §7.1).
    let challenge: Data

    init() {
        var generator = SystemRandomNumberGenerator()
        challenge = Data((0..<32).map { _ in generator.next() as UInt8 })
    }

    /// Whether `signature` is `identity`'s signature of this stream's challenge for `address`.
    func verifies(_ signature: some DataProtocol, by identity: PublicIdentity, of address: DeviceAddress) -> Bool {
        DeviceProof.isValid(
            signature, .stream, challenge: challenge, binding: DeviceProof.streamBinding(address), for: identity)
    }

    /// Decides, once; later calls change nothing.
    func decide(_ proven: Bool) {
        let waiter: CheckedContinuation<Bool, Never>?? = state.withLock { state in
            guard case .pending(let waiter) = state else { return nil }
            state = .decided(proven)
            return .some(waiter)
        }
        if case .some(let waiter?) = waiter { waiter.resume(returning: proven) }
    }

    /// Waits for the decision, or decides `false` after `limit`.
    func proven(within limit: Duration) async -> Bool {
        let timer = Task { [self] in
            try? await Task.sleep(for: limit)
            decide(false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let decided: Bool? = state.withLock { state in
                switch state {
                case .decided(let proven): return proven
                case .pending:
                    state = .pending(continuation)
                    return nil
                }
            }
            if let decided { continuation.resume(returning: decided) }
        }
    }
}
