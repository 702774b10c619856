import Foundation
import Testing

@testable import ConfidantKit

@Suite("The store's log synced without its connection")
struct WriteAheadLogTests {
    @Test("no file: nothing to sync; a file replaced since is opened again")
    func replacedFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-wal-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite-wal").path
        let log = WriteAheadLog(path: path)
        #expect(try log.sync() == false)
        #expect(log.openedInode == nil)

        try Data("frames".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try log.sync())
        let first = try #require(log.openedInode)
        #expect(try log.sync())
        #expect(log.openedInode == first, "the same file: the same descriptor")

        // Moved aside (kept, so that its inode is not reused) and made anew, as SQLite does
        // after its last connection closed.
        try FileManager.default.moveItem(atPath: path, toPath: path + ".old")
        try Data("new frames".utf8).write(to: URL(fileURLWithPath: path))
        let replaced = try #require(
            (try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? NSNumber)?.uint64Value)
        #expect(replaced != first)
        #expect(try log.sync())
        #expect(log.openedInode == replaced)
    }
}
