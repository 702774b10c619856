import ConfidantCrypto
import Foundation
import OpenAPIRuntime

extension HTTPBody {
    /// The bytes of an open file as a streamed body, read `chunkSize` bytes at a time only as the
    /// consumer asks for them (a slow reader holds back reading: never the whole file in memory);
    /// the handle is closed when the body has been read or is dropped.
    /// - Parameter progress: called with the bytes read so far, after each chunk.
    public static func streaming(
        _ handle: FileHandle, length: Int64, chunkSize: Int = 64 * 1024,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) -> HTTPBody {
        HTTPBody(
            FileChunks(file: OpenFile(handle), chunkSize: chunkSize, progress: progress), length: .known(length),
            iterationBehavior: .single)
    }
}

/// Pulls a file's bytes chunk by chunk as they are asked for. AsyncStream would read ahead into
/// an unbounded buffer whenever the network is slower than the disk.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let file: OpenFile
    let chunkSize: Int
    let progress: (@Sendable (Int64) -> Void)?

    struct AsyncIterator: AsyncIteratorProtocol {
        let file: OpenFile
        let chunkSize: Int
        let progress: (@Sendable (Int64) -> Void)?
        var done: Int64 = 0

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard let data = try file.read(chunkSize) else {
                file.close()
                return nil
            }
            done += Int64(data.count)
            progress?(done)
            return ArraySlice(data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(file: file, chunkSize: chunkSize, progress: progress) }
}

/// A file handle read by one body and closed once, at its end or when the body is dropped.
final class OpenFile: @unchecked Sendable {
    // @unchecked: the handle is used by one iterator at a time (`iterationBehavior: .single`),
    // and `lock` guards closing against a read.
    private let handle: FileHandle
    private let lock = NSLock()
    private var closed = false

    init(_ handle: FileHandle) { self.handle = handle }

    func read(_ count: Int) throws -> Data? {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return nil }
        let data = try handle.readWhole(upToCount: count)
        return data.isEmpty ? nil : data
    }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        try? handle.close()
    }

    deinit { close() }
}
