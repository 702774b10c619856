import Foundation
import Testing

@testable import ConfidantVault

/// The vault's batched, pipelined file writer.
@Suite struct FileIOTests {
    private func temporaryFile() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("fileio-\(UUID().uuidString)")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        return url
    }

    @Test("chunks of every size, empty ones among them, arrive whole and in order across batches")
    func writerKeepsOrder() throws {
        let url = try temporaryFile()
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try FileHandle(forWritingTo: url)
        // A small batch and window so that many batches are in flight and the caller waits.
        let writer = PipelinedFileWriter(output: handle, batchBytes: 10_000, window: 2)
        var expected = Data()
        var generator = SystemRandomNumberGenerator()
        for index in 0..<500 {
            let size = index % 7 == 0 ? 0 : Int.random(in: 1...40_000, using: &generator)
            let chunk = Data((0..<size).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
            expected.append(chunk)
            try writer.append(chunk)
        }
        try writer.finish()
        try handle.close()
        #expect(try Data(contentsOf: url) == expected)
    }

    @Test("a write that fails is reported, not lost")
    func writerReportsFailure() throws {
        let url = try temporaryFile()
        defer { try? FileManager.default.removeItem(at: url) }
        let readOnly = try FileHandle(forReadingFrom: url)  // writing to it fails with EBADF
        defer { try? readOnly.close() }
        let writer = PipelinedFileWriter(output: readOnly, batchBytes: 1, window: 1)
        #expect(throws: VaultError.self) {
            try writer.append(Data([1, 2, 3]))
            try writer.append(Data([4]))
            try writer.finish()
        }
    }

    @Test("discarding stops the writes: the file then holds whole batches only, and no more arrive")
    func writerDiscards() throws {
        let url = try temporaryFile()
        defer { try? FileManager.default.removeItem(at: url) }
        let handle = try FileHandle(forWritingTo: url)
        let writer = PipelinedFileWriter(output: handle, batchBytes: 4_096, window: 2)
        for _ in 0..<200 { try writer.append(Data(repeating: 7, count: 4_096)) }
        try writer.append(Data(repeating: 7, count: 100))  // appended, never handed over
        writer.discard()
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? -1
        try handle.close()  // safe: the writing thread is done with it
        #expect(size % 4_096 == 0 && size <= 200 * 4_096)
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int == size)
        #expect(throws: CancellationError.self) { try writer.finish() }
    }
}
