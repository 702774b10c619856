import Foundation
import Testing

@testable import ConfidantVault

/// Range reads of encrypted objects agree with a full decryption, and detect what it detects.
@Suite("Media reader (range requests)")
struct MediaReaderTests {
    let key = VaultKey.generate()
    let id = UUID()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vault-reader-\(UUID())")

    private func object(_ plain: [UInt8], edit: (inout [UInt8]) -> Void = { _ in }) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var sealed = try encryptBytes(plain, key: key, id: id)
        edit(&sealed)
        let url = directory.appendingPathComponent(UUID().uuidString)
        try Data(sealed).write(to: url)
        return url
    }

    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 200_000])
    func rangesAtSegmentEdges(size: Int) throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let reader = try MediaReader(url: try object(plain), key: key, objectID: id, name: "clip.webm")
        #expect(reader.size == size)
        let edges = [0, 1, 65_535, 65_536, 65_537, 131_071, 131_072, size - 1, size].filter { (0...size).contains($0) }
        for start in edges {
            for end in edges where end >= start {
                #expect(try reader.read(start..<end) == Data(plain[start..<end]), "bytes \(start)..<\(end) of \(size)")
            }
        }
        #expect(throws: VaultError.self) { try reader.read(0..<(size + 1)) }
    }

    @Test func tamperingTruncationAndAnotherObjectsKeyAreDetected() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = [UInt8](repeating: 7, count: 200_000)
        let tampered = try MediaReader(
            url: try object(plain) { $0[MediaStream.headerCount + 65_552 + 10] ^= 1 }, key: key, objectID: id,
            name: "clip.webm")
        #expect(try tampered.read(0..<100).count == 100)  // segment 1 is intact
        #expect(throws: VaultError.tampered(item: "clip.webm", segment: 2)) { try tampered.read(70_000..<70_010) }

        // Cut after two whole segments: the file's new final segment lacks the last flag.
        let cut = try MediaReader(
            url: try object(plain) { $0 = Array($0.prefix(MediaStream.headerCount + 2 * 65_552)) }, key: key,
            objectID: id, name: "clip.webm")
        #expect(cut.size == 2 * 65_536)
        #expect(throws: VaultError.truncated(item: "clip.webm", afterSegment: 2)) { try cut.read(131_000..<131_072) }

        let other = try MediaReader(url: try object(plain), key: key, objectID: UUID(), name: "clip.webm")
        #expect(throws: VaultError.tampered(item: "clip.webm", segment: 1)) { try other.read(0..<1) }
        #expect(throws: VaultError.self) {
            try MediaReader(url: try object([1, 2, 3]) { $0[0] = 0 }, key: key, objectID: id, name: "x")
        }
    }
}
