import ConfidantCrypto
import Crypto
import Dispatch
import Foundation

/// SHA-256 computed on a second thread while the caller goes on encrypting, so hashing an
/// object's ciphertext (its content address) costs no extra time on a multi-core machine.
/// At most `window` chunks wait at once, so memory stays bounded.
final class PipelinedHasher: @unchecked Sendable {
    // Mutated only on `queue`; read once after `queue.sync` in `finalize`.
    private var hasher = SHA256()
    private let queue = DispatchQueue(label: "confidant.vault.hash")
    private let slots: DispatchSemaphore

    init(window: Int = 16) { slots = DispatchSemaphore(value: window) }

    func update(_ data: Data) {
        slots.wait()
        queue.async {
            self.hasher.update(data: data)
            self.slots.signal()
        }
    }

    /// Waits for every queued chunk and returns the digest as lower-case hex.
    func finalize() -> String {
        queue.sync { hasher.finalize().hexString }
    }
}
