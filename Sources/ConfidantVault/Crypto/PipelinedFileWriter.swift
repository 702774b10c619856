import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
    private let systemWritev = Glibc.writev
#elseif canImport(Darwin)
    import Darwin
    private let systemWritev = Darwin.writev
#endif

/// Writes a file on a second thread while the caller goes on reading and encrypting (by profile,
/// the write system calls cost about as much as the encryption). Each batch of chunks — the
/// segments of about 1 MiB — goes out in one `writev(2)`, so the chunks are neither copied into
/// one buffer nor written one system call each. At most `window` batches wait at once, so memory
/// stays bounded.
final class PipelinedFileWriter: @unchecked Sendable {
    // `failure` is guarded by `lock`; `pending` and `pendingBytes` belong to the caller's thread.
    private var failure: (any Error)?
    private let lock = NSLock()
    private let output: FileHandle
    private let queue = DispatchQueue(label: "confidant.vault.file-writer")
    private let slots: DispatchSemaphore
    private let batchBytes: Int
    private var pending: [Data] = []
    private var pendingBytes = 0

    /// - Parameters:
    ///   - output: the file, written from its current offset.
    ///   - batchBytes: how many bytes gather before a batch is handed to the writing thread.
    ///   - window: how many batches may wait for it.
    init(output: FileHandle, batchBytes: Int = 1 << 20, window: Int = 4) {
        self.output = output
        self.batchBytes = batchBytes
        slots = DispatchSemaphore(value: window)
    }

    /// Adds `data` after what came before (not copied); a write error from an earlier batch is
    /// thrown here or by `finish`.
    func append(_ data: Data) throws {
        pending.append(data)
        pendingBytes += data.count
        if pendingBytes >= batchBytes { try flush() }
    }

    /// Writes what was appended and waits for every batch; throws the first write error.
    func finish() throws {
        try flush()
        try queue.sync {
            if let failure = lock.withLock({ failure }) { throw failure }
        }
    }

    /// Drops what was appended and not yet written, and returns once the writing thread has
    /// stopped touching the file — so the caller may close it. Call it when the work fails
    /// half-way; after `finish` it does nothing.
    func discard() {
        pending = []
        pendingBytes = 0
        lock.withLock { failure = failure ?? CancellationError() }
        queue.sync {}
    }

    private func flush() throws {
        guard !pending.isEmpty else { return }
        let chunks = pending
        pending = []
        pendingBytes = 0
        if let failure = lock.withLock({ failure }) { throw failure }
        slots.wait()
        queue.async {
            defer { self.slots.signal() }
            guard self.lock.withLock({ self.failure == nil }) else { return }
            do {
                try Self.writeAll(chunks, to: self.output.fileDescriptor)
            } catch {
                self.lock.withLock { self.failure = error }
            }
        }
    }

    /// Writes every byte of `chunks` with as few `writev` calls as the kernel allows.
    static func writeAll(_ chunks: [Data], to descriptor: Int32) throws {
        var buffers: [UnsafeRawBufferPointer] = []
        buffers.reserveCapacity(chunks.count)
        try withBuffers(of: chunks[...], collecting: &buffers) { buffers in
            var vectors = buffers.filter { !$0.isEmpty }.map {
                iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
            }
            var first = 0
            while first < vectors.count {
                let written = vectors[first...].withUnsafeBufferPointer {
                    systemWritev(descriptor, $0.baseAddress, Int32($0.count))
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw VaultError.io("cannot write a file: \(String(cString: strerror(errno)))")
                }
                // Skip what went out; a partly written vector continues from where it stopped.
                var left = written
                while first < vectors.count, left >= vectors[first].iov_len {
                    left -= vectors[first].iov_len
                    first += 1
                }
                if left > 0 {
                    vectors[first].iov_base = vectors[first].iov_base.map { $0 + left }
                    vectors[first].iov_len -= left
                }
            }
        }
    }

    /// Calls `body` with the bytes of every chunk, each valid for the call (nested
    /// `withUnsafeBytes`, the only way to hold several `Data` buffers at once).
    private static func withBuffers(
        of chunks: ArraySlice<Data>, collecting buffers: inout [UnsafeRawBufferPointer],
        _ body: ([UnsafeRawBufferPointer]) throws -> Void
    ) throws {
        guard let chunk = chunks.first else { return try body(buffers) }
        try chunk.withUnsafeBytes { bytes in
            buffers.append(bytes)
            try withBuffers(of: chunks.dropFirst(), collecting: &buffers, body)
        }
    }
}
