import ConfidantCrypto
import Foundation
import Testing

/// `FileHandle.readWhole`: reads of the asked size with `read(2)`, shared by the vault and uploads.
@Suite struct FileHandleWholeReadsTests {
    @Test("whole reads return the asked count until the end, then the rest, then nothing")
    func wholeReads() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("wholereads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: url)
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var read = Data()
        var sizes: [Int] = []
        while true {
            let chunk = try handle.readWhole(upToCount: 65_552)
            if chunk.isEmpty { break }
            sizes.append(chunk.count)
            read.append(chunk)
        }
        #expect(sizes == [65_552, 65_552, 65_552, 65_552, 37_792])
        #expect(read == bytes)
        #expect(try handle.readWhole(upToCount: 0).isEmpty)
    }
}
