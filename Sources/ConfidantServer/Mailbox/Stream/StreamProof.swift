import ConfidantCrypto
import Foundation
import Synchronization

/// Whether a stream's client proved that it holds its device's key: decided once, by its first
/// frame (the signature of the stream's challenge) or by the time limit running out, whichever
/// comes first (`StreamSession`).
final class StreamProof: Sendable {
    /// How the proof was decided.
    enum Outcome: Equatable, Sendable {
        /// The first frame was the device's signature of the challenge.
        case proven
        /// The first frame was something else, or a signature by another key.
        case refused
        /// Nothing came within the limit: a silent client, or one too slow to answer in time.
        case late
        /// The device's key could not be looked up (the database failed): nothing was decided
        /// about the client, which should try again.
        case unavailable
    }
    private let state = Mutex<Outcome?>(nil)
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
    /// - Returns: whether this call decided.
    @discardableResult
    func decide(_ outcome: Outcome) -> Bool {
        state.withLock { state in
            guard state == nil else { return false }
            state = outcome
            return true
        }
    }

    /// The decision, once there is one.
    var decided: Outcome? { state.withLock { $0 } }
}
