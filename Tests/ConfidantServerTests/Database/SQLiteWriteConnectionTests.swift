import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantServer

/// The relay's own SQLite write connection, on which send groups and acknowledgements run: it
/// must read and write exactly what the Fluent statements it stands in for read and write.
@Suite("SQLite write connection")
struct SQLiteWriteConnectionTests {
    private static func path(of relay: TestRelay) throws -> String {
        guard case .sqlite(let path) = relay.database else {
            throw SQLiteStatementFailure(code: 1, message: "not SQLite")
        }
        return path
    }

    private static func writer(of relay: TestRelay) throws -> SQLiteWriter {
        guard let writer = relay.server.services.database.writer else {
            throw SQLiteStatementFailure(code: 1, message: "the relay has no write connection of its own")
        }
        return writer
    }

    @Test("the directory read on the own connection equals the one Fluent's statement reads")
    func directoryMatchesFluent() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let sent = UUID()
            _ = try await alice.send("once", to: [(bob.address, bob.identity.publicIdentity)], messageID: sent)
            let users = [alice.id, bob.id, UUID()]
            let pairs: [(sender: UUID, message: UUID)] = [(alice.id, sent), (alice.id, UUID()), (bob.id, sent)]
            let fluent = try await RecipientDirectory.load(
                users, readingLastCursor: true, postedPairs: pairs, on: relay.server.application.db)
            let own = try await Self.writer(of: relay).write { connection in
                try MailboxWriteStatements.directory(users, postedPairs: pairs, on: connection)
            }
            #expect(own.users == fluent.users)
            #expect(own.users == [alice.id, bob.id])
            #expect(own.devices == fluent.devices)
            #expect(own.pending == fluent.pending)
            #expect(own.pending == [bob.address: 1])
            #expect(own.lastCursor == fluent.lastCursor)
            #expect(Set(own.posted.keys) == Set(fluent.posted.keys))
            for (key, row) in fluent.posted {
                #expect(own.posted[key]?.stored == row.stored)
                #expect(own.posted[key]?.receivedAt == row.receivedAt)
            }
        }
    }

    @Test("statements are prepared once: sends to one user and then another plan none of them again")
    func statementsArePreparedOnce() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            for (index, recipient) in [bob, carol, bob, carol].enumerated() {
                _ = try await alice.send(
                    "message \(index)", to: [(recipient.address, recipient.identity.publicIdentity)])
            }
            let counts = try await Self.writer(of: relay).write { $0.reprepareCounts }
            // The device query is the one whose plan looks at its bound user (SQLite marks it so
            // that rebinding may re-plan it): it must be among the statements kept.
            #expect(counts.keys.contains { $0.contains("LEFT JOIN") })
            #expect(counts.keys.contains("COMMIT"))
            for (sql, count) in counts {
                #expect(count == 0, "prepared again \(count) times: \(sql)")
            }
        }
    }

    @Test(
        "entries written on the own connection read back through Fluent as they were stored; acknowledging deletes each once"
    )
    func entriesRoundTrip() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let now = Date().wholeMilliseconds
            let new = [
                NewMailboxEntry(
                    recipient: bob.address, kind: .envelope, sender: alice.address, messageID: UUID(),
                    payload: Data((0..<300).map { UInt8($0 % 256) }), receivedAt: now),
                NewMailboxEntry(
                    recipient: bob.address, kind: .keyChange, sender: alice.address, messageID: nil,
                    payload: Data(), receivedAt: now.addingTimeInterval(0.001)),
            ]
            let stored = try await Self.writer(of: relay).write { connection in
                try MailboxWriteStatements.insert(new, after: 41, on: connection)
            }
            #expect(stored.map(\.entry.cursor) == [42, 43])
            let page = try await MailboxTable.page(
                of: bob.address, after: 0, limit: 10, on: relay.server.application.db)
            #expect(page.map(\.cursor) == [42, 43])
            for (read, written) in zip(page, stored.map(\.entry)) {
                #expect(read.kind == written.kind)
                #expect(read.sender == written.sender)
                #expect(read.messageID == written.messageID)
                #expect(read.payload == written.payload)
                // SQLiteNIO reads dates back to the microsecond (since 2001): equal at the API's
                // precision, as entries written through Fluent are.
                #expect(read.receivedAt.wholeMilliseconds == written.receivedAt)
            }
            // Alice's cursors are not hers to delete; Bob's are deleted once, even when asked twice.
            let counts = try await Self.writer(of: relay).write { connection in
                try MailboxWriteStatements.delete(
                    [([42], alice.address), ([42, 42, 43, 44], bob.address), ([43], bob.address)], on: connection)
            }
            #expect(counts == [0, 2, 1])
            #expect(
                try await MailboxTable.page(of: bob.address, after: 0, limit: 10, on: relay.server.application.db)
                    .isEmpty)
        }
    }

    @Test("a failing transaction leaves nothing behind; a read left on a row does not outlive its transaction")
    func rollbackAndSnapshots() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let writer = try Self.writer(of: relay)
            let entry = NewMailboxEntry(
                recipient: alice.address, kind: .envelope, sender: alice.address, messageID: UUID(),
                payload: Data([1]), receivedAt: Date())
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await writer.write { connection in
                    _ = try MailboxWriteStatements.insert([entry], after: 0, on: connection)
                    throw Refused()
                }
            }
            let db = relay.server.application.db
            #expect(try await MailboxTable.page(of: alice.address, after: 0, limit: 10, on: db).isEmpty)

            // The directory's statement of the last cursor stops on its row. If it kept its read
            // transaction past COMMIT, the next write here would fail (SQLITE_BUSY_SNAPSHOT) once
            // another connection has written.
            _ = try await writer.write { connection in
                try MailboxWriteStatements.insert([entry], after: 0, on: connection)
            }
            let directory = try await writer.write { connection in
                try MailboxWriteStatements.directory([alice.id], postedPairs: [], on: connection)
            }
            #expect(directory.lastCursor == 1)
            try await relay.server.services.database.write { db in
                try await MailboxTable.insert([entry], on: db)
            }
            let stored = try await writer.write { connection in
                try MailboxWriteStatements.insert([entry], after: 100, on: connection)
            }
            #expect(stored.map(\.entry.cursor) == [101])
            #expect(try await MailboxTable.page(of: alice.address, after: 0, limit: 10, on: db).count == 3)
        }
    }

    @Test(
        "a device's waiting entries are counted once, then kept from the own connection's sends and acknowledgements (not from a rolled-back transaction), and counted again after another connection wrote"
    )
    func pendingEntriesKept() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let writer = try Self.writer(of: relay)
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            for index in 0..<3 { _ = try await alice.send("message \(index)", to: toBob) }
            let (bobID, bobAddress) = (bob.id, bob.address)
            @Sendable func pending(_ connection: SQLiteWriteConnection) throws -> (read: Int?, kept: Int?) {
                let directory = try MailboxWriteStatements.directory([bobID], postedPairs: [], on: connection)
                return (directory.pending[bobAddress], connection.pendingEntries.count(of: bobAddress))
            }
            #expect(try await writer.write(pending) == (3, 3))

            // An acknowledgement and a send through the relay, and an insert that rolls back.
            let page = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 10)).ok.body.json
            _ = try await bob.client.acknowledge(body: .json(.init(cursors: [page.entries[0].cursor]))).ok
            _ = try await alice.send("message 3", to: toBob)
            struct Refused: Error {}
            let entry = NewMailboxEntry(
                recipient: bob.address, kind: .envelope, sender: alice.address, messageID: UUID(),
                payload: Data([1]), receivedAt: Date())
            await #expect(throws: Refused.self) {
                try await writer.write { connection in
                    _ = try MailboxWriteStatements.insert([entry], after: 1_000, on: connection)
                    throw Refused()
                }
            }
            #expect(try await writer.write(pending) == (3, 3))

            // Kept, not counted again: nothing on the own connection writes the mailbox but its
            // statements, so a row deleted there behind them goes unseen...
            let behind = page.entries[1].cursor
            try await writer.write { connection in
                try connection.execute("DELETE FROM \(MailboxRecord.schema) WHERE \"cursor\" = \(behind)")
            }
            #expect(try await writer.write(pending) == (3, 3))
            // ...while whatever another connection commits makes every device count again.
            try await relay.server.services.database.write { db in
                try await MailboxTable.deleteAll(of: bob.id, device: bob.address.deviceID, on: db)
            }
            #expect(try await writer.write(pending) == (nil, 0))
        }
    }

    @Test("the write-ahead log starts over once it is past its limit instead of growing with every commit")
    func logStartsOver() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let limit = 64
            let writer = SQLiteWriter(
                path: try Self.path(of: relay), pragmas: [], busyTimeoutMilliseconds: 1_000, gate: WriteGate(),
                logLimitFrames: limit)
            var longest = 0
            var restarts = 0
            do {
                var last = 0
                for index in 0..<400 {
                    // Each commit writes at least the table's and the index's page: 800 frames
                    // or more when the log never starts over.
                    let entry = NewMailboxEntry(
                        recipient: alice.address, kind: .envelope, sender: alice.address, messageID: UUID(),
                        payload: Data(repeating: 7, count: 100), receivedAt: Date())
                    // Inside the transaction, the count is still the commit's before.
                    let frames = try await writer.write { connection in
                        _ = try MailboxWriteStatements.insert([entry], after: Int64(1_000 + index), on: connection)
                        return connection.logFrames
                    }
                    if frames < last { restarts += 1 }
                    last = frames
                    longest = max(longest, frames)
                }
            } catch {
                await writer.close()
                throw error
            }
            await writer.close()
            #expect(restarts > 0)
            // A checkpoint at the first commit past the limit; the log starts over at the next one.
            #expect(longest <= limit + 8, "the log reached \(longest) frames")
        }
    }

    @Test(
        "an idle write connection writes on the caller's thread at once; a write that would wait (gate held, file locked, long log, thread busy) writes nothing and says so"
    )
    func writeWhereIdle() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let path = try Self.path(of: relay)
            let gate = WriteGate()
            let limit = 64
            let writer = SQLiteWriter(
                path: path, pragmas: [], busyTimeoutMilliseconds: 60_000, gate: gate, logLimitFrames: limit)
            let db = relay.server.application.db
            let writes = EntryWrites(writer: writer, device: alice.address)
            func stored() async throws -> Int {
                try await MailboxTable.page(of: alice.address, after: 0, limit: 1_000, on: db).count
            }
            do {
                // Not opened yet: opening is the thread's work.
                #expect(writes.storeHere() == nil)
                _ = try await writer.write { _ in 0 }
                // Open, but how the log was left is not known yet: its first write (which may
                // start the log over) is the thread's too.
                #expect(writes.storeHere() == nil)
                try await writes.storeOnThread()
                // Idle: written before `runIfIdle` returns.
                #expect(throws: Never.self) { try writes.storeHere()?.get() }
                #expect(try await stored() == 2)

                // The gate held (a Fluent write): nothing written, the gate still the holder's.
                await gate.acquire()
                #expect(throws: SQLiteWriter.WouldWait.self) { try writes.storeHere()?.get() }
                gate.release()

                // Another connection holds the file's lock: refused without the minute's busy
                // timeout, which the thread's writes still wait (the lock goes after they start).
                let holder = try SQLiteWriteConnection(path: path, pragmas: [], busyTimeoutMilliseconds: 0)
                try holder.execute("BEGIN EXCLUSIVE")
                #expect(throws: SQLiteWriter.WouldWait.self) { try writes.storeHere()?.get() }
                let waited = Task { try await writer.write { _ in 1 } }
                try await Task.sleep(for: .milliseconds(200))
                try holder.execute("ROLLBACK")
                #expect(try await waited.value == 1)
                #expect(try await stored() == 2)

                // The thread busy with other work: not run here.
                let release = DispatchSemaphore(value: 0)
                let busy = DispatchSemaphore(value: 0)
                writer.submit { _ in
                    busy.signal()
                    release.wait()
                }
                await withCheckedContinuation { continuation in
                    Thread {
                        busy.wait()
                        continuation.resume()
                    }.start()
                }
                #expect(writes.storeHere() == nil)
                release.signal()
                // The thread's work done and the connection let go (the thread answers after).
                _ = try await writer.write { _ in 0 }

                // A log past its limit: the thread's write checkpoints it, not the caller.
                var here = 0
                for _ in 0..<10_000 {
                    guard let outcome = writes.storeHere() else { break }
                    if case .success = outcome { here += 1 }
                }
                #expect(here > 0)
                #expect(writes.storeHere() == nil)
                #expect(try await stored() == 2 + here)
                // The thread's next write checkpoints the log, and the one after starts it over.
                try await writes.storeOnThread()
                try await writes.storeOnThread()
                #expect(try writes.storeHere()?.get() != nil)
                #expect(try await stored() == 5 + here)
            } catch {
                await writer.close()
                throw error
            }
            await writer.close()
        }
    }

    @Test(
        "a write that may start the log over (a checkpoint running, or one that copied the whole log) is the thread's, which then starts it over; the relay's checkpoints say so"
    )
    func logStartsOverOnTheThread() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let path = try Self.path(of: relay)
            let writer = SQLiteWriter(path: path, pragmas: [], busyTimeoutMilliseconds: 5_000, gate: WriteGate())
            let writes = EntryWrites(writer: writer, device: alice.address)
            do {
                try await writes.storeOnThread()
                #expect(try writes.storeHere()?.get() != nil)

                // While a checkpoint runs, whatever it copies: the thread's.
                writer.checkpointStarted()
                #expect(writes.storeHere() == nil)
                writer.checkpointEnded(copiedWhole: false)
                #expect(try writes.storeHere()?.get() != nil)

                // A checkpoint that copied the whole log: the next write is the thread's, and
                // starts the log over (its frames counted from the start again).
                // Twenty commits of at least two pages each: a log of 40 frames or more.
                for _ in 0..<20 { try await writes.storeOnThread() }
                let longBefore = try await writer.write { $0.logFrames }
                let other = try SQLiteWriteConnection(path: path, pragmas: [], busyTimeoutMilliseconds: 5_000)
                // A connection checkpoints the log only once it has opened it, by reading.
                try other.execute("SELECT count(*) FROM sqlite_schema")
                writer.checkpointStarted()
                let copiedWhole = other.checkpoint()
                writer.checkpointEnded(copiedWhole: copiedWhole)
                #expect(copiedWhole)
                #expect(writer.logMayStartOver)
                #expect(writes.storeHere() == nil)
                try await writes.storeOnThread()
                // Read after that commit (inside a transaction it is the count before it).
                let startedOver = try await writer.write { $0.logFrames }
                #expect(startedOver < longBefore, "the log went on from \(longBefore) to \(startedOver) frames")
                #expect(!writer.logMayStartOver)
                #expect(try writes.storeHere()?.get() != nil)

                // The relay's own background checkpoints (`WALCheckpoints`) tell its writer: on an
                // idle relay, one that starts after a send copies the whole log. (One starts at
                // most every 250 ms, so a send right after another's may start none.)
                let own = try Self.writer(of: relay)
                let bob = try await TestUser.make(relay, name: "bob")
                var told = false
                for _ in 0..<20 where !told {
                    try await Task.sleep(for: .milliseconds(300))
                    _ = try await alice.send("hello", to: [(bob.address, bob.identity.publicIdentity)])
                    for _ in 0..<100 where !told {
                        told = own.logMayStartOver
                        if !told { try await Task.sleep(for: .milliseconds(10)) }
                    }
                }
                #expect(told)
            } catch {
                await writer.close()
                throw error
            }
            await writer.close()
        }
    }

    @Test("a file another connection holds locked fails as database_unavailable after the busy timeout, then works")
    func busyFile() async throws {
        try await TestRelay.run(.sqlite) { relay in
            let path = try Self.path(of: relay)
            let holder = try SQLiteWriteConnection(path: path, pragmas: [], busyTimeoutMilliseconds: 0)
            try holder.execute("BEGIN EXCLUSIVE")
            let writer = SQLiteWriter(path: path, pragmas: [], busyTimeoutMilliseconds: 50, gate: WriteGate())
            do {
                let failure = await #expect(throws: SQLiteStatementFailure.self) {
                    try await writer.write { _ in 1 }
                }
                #expect(failure?.primaryCode == 5)  // SQLITE_BUSY
                #expect(failure.flatMap(DatabaseOutage.classify)?.failure.code == .databaseUnavailable)
                try holder.execute("ROLLBACK")
                #expect(try await writer.write { _ in 1 } == 1)
            } catch {
                await writer.close()
                throw error
            }
            await writer.close()
            await #expect(throws: SQLiteStatementFailure.self) { try await writer.write { _ in 1 } }
            // Work handed over after the close still runs, and hears that its writes fail.
            let outcome = await withCheckedContinuation { continuation in
                writer.submit { thread in
                    continuation.resume(returning: Result { try thread.write { _ in 1 } })
                }
            }
            #expect(throws: SQLiteStatementFailure.self) { try outcome.get() }
        }
    }
}

/// Mailbox entries for one device, one cursor after another, written through a test's own
/// `SQLiteWriter`: on the caller's thread if `runIfIdle` runs them there, or on its thread.
private final class EntryWrites {
    private let writer: SQLiteWriter
    private let device: DeviceAddress
    /// The cursor of the last entry stored.
    private var cursor: Int64 = 0

    init(writer: SQLiteWriter, device: DeviceAddress) {
        self.writer = writer
        self.device = device
    }

    private func entry() -> NewMailboxEntry {
        NewMailboxEntry(
            recipient: device, kind: .envelope, sender: device, messageID: UUID(),
            payload: Data(repeating: 1, count: 100), receivedAt: Date())
    }

    /// One entry stored by `runIfIdle`: nil when it did not run, else the write's outcome.
    func storeHere() -> Result<Void, any Error>? {
        let new = entry()
        var outcome: Result<Void, any Error>?
        let ran = writer.runIfIdle { [cursor] thread in
            outcome = Result {
                _ = try thread.write { try MailboxWriteStatements.insert([new], after: cursor, on: $0) }
            }
        }
        guard ran, let outcome else { return nil }
        if case .success = outcome { cursor += 1 }
        return outcome
    }

    /// One entry stored by the writer's thread.
    func storeOnThread() async throws {
        let new = entry()
        _ = try await writer.write { [cursor] in try MailboxWriteStatements.insert([new], after: cursor, on: $0) }
        cursor += 1
    }
}
