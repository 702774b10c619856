import ConfidantCrypto
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

@Suite("The store's log checkpointed off the committing thread")
struct LogCheckpointTests {
    @Test(
        "commits that take the log past the threshold leave the checkpoint to a connection of its own",
        .timeLimit(.minutes(2)))
    func checkpointedApart() async throws {
        let profile = TestProfile()
        defer { profile.remove() }
        try profile.storage.prepare()
        let store = try LocalStore.open(at: profile.storage.storeURL, identity: PrivateIdentity.generate())
        let (outcomes, continuation) = AsyncStream.makeStream(of: LogCheckpoints.Outcome.self)
        store.checkpoints.observe { continuation.yield($0) }

        // SQLite's own checkpoint in the commit is off on the store's connection: the log hook
        // replaced it (the pragma reads 0 then, 1,000 otherwise).
        let automatic = try store.read { db in try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") }
        #expect(automatic == 0)

        // Each commit writes a page of its own and the table's: past 1,000 frames well before the end.
        try store.write(.deferred) { db in try db.execute(sql: "CREATE TABLE filler (bytes BLOB NOT NULL)") }
        for _ in 0..<(Int(LogCheckpoints.threshold) / 2 + 100) {
            try store.write(.deferred) { db in
                try db.execute(sql: "INSERT INTO filler (bytes) VALUES (?)", arguments: [Data(count: 3_000)])
            }
        }
        var iterator = outcomes.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.frames >= LogCheckpoints.threshold)
        #expect(first.copied > 0, "the pages went back into the database")

        // What was copied reads back through the store's own connection.
        let rows = try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM filler") }
        #expect(rows == Int(LogCheckpoints.threshold) / 2 + 100)
    }
}
