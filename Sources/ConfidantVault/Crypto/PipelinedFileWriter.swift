import Dispatch
import Foundation

/// Writes a file on a second thread while the caller goes on reading and encrypting (by profile,
/// the write system calls cost about as much as the encryption). At most `window` chunks wait
/// at once, so memory stays bounded.
final class PipelinedFileWriter: @unchecked Sendable {
    // `failure` is guarded by `lock`.
    private var failure: (any Error)?
    private let lock = NSLock()
    private let output: FileHandle
    private let queue = DispatchQueue(label: "confidant.vault.file-writer")
    private let slots: DispatchSemaphore

    init(output: FileHandle, window: Int = 32) {
        self.output = output
        slots = DispatchSemaphore(value: window)
    }

    /// Queues `data`; a write error from an earlier chunk is thrown here or by `finish`.
    func write(_ data: Data) throws {
        if let failure = lock.withLock({ failure }) { throw failure }
        slots.wait()
        queue.async {
            defer { self.slots.signal() }
            guard self.lock.withLock({ self.failure == nil }) else { return }
            do {
                try self.output.write(contentsOf: data)
            } catch {
                self.lock.withLock { self.failure = error }
            }
        }
    }

    /// Waits for every queued chunk; throws the first write error.
    func finish() throws {
        try queue.sync {
            if let failure = lock.withLock({ failure }) { throw failure }
        }
    }
}
