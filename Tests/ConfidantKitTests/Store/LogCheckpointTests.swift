import ConfidantCrypto
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("The store's log checkpointed after the commit, not in it")
struct LogCheckpointTests {
    @Test("commits that take the log past the threshold queue a checkpoint on the connection, which copies all of it")
    func checkpointedAfterTheCommit() async throws {
        let profile = TestProfile()
        defer { profile.remove() }
        let store = try profile.openStore()

        // SQLite's own checkpoint in the commit is off on the store's connection: the log hook
        // replaced it (the pragma reads 0 then, 1,000 otherwise).
        let automatic = try store.read { db in try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") }
        #expect(automatic == 0)

        // Each commit writes a page of its own and the table's: past 1,000 frames well before the end.
        try store.write(.deferred) { db in try db.execute(sql: "CREATE TABLE filler (bytes BLOB NOT NULL)") }
        let rows = Int(LogCheckpoints.threshold) / 2 + 100
        for _ in 0..<rows {
            try store.write(.deferred) { db in
                try db.execute(sql: "INSERT INTO filler (bytes) VALUES (?)", arguments: [Data(count: 3_000)])
            }
        }
        try await waitUntil { store.checkpoints.runs.load(ordering: .relaxed) >= 1 }
        // It copied the whole log: the next commit starts the log over, so it holds a few frames.
        try store.write(.deferred) { db in try db.execute(sql: "DELETE FROM filler WHERE rowid = 1") }
        let (frames, _) = try await store.database.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        #expect(frames < LogCheckpoints.threshold, "\(frames) frames")
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM filler") } == rows - 1)
    }
}
