import ConfidantServer
import ConfidantTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConfidantKit

/// While a window of sends runs, a new message is handed to it to queue with the others handed
/// over meanwhile, in one transaction, instead of in one of its own (`OutboxDrain.handOver`).
@Suite("New messages handed to a running window of sends")
struct WindowHandOverTests {
    @Test(
        "messages handed over are queued together in one commit and each sender answered; one built on a stale context is refused, nothing written for it"
    )
    func handedOverQueuedTogether() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            let (drain, store, diagnostics) = (
                await alice.messenger.sender.drain, alice.messenger.store, alice.diagnostics
            )
            let stale = try store.sendingContext(for: toBob.id)
            try store.write { db in try store.setTimer(60, for: toBob.id, db) }
            let fresh = try store.sendingContext(for: toBob.id)
            // The stale one last (its check forgets every context kept: see `SendingContexts`).
            let batch = [("one", fresh), ("two", fresh), ("stale", stale)].map { text, context in
                LocalStore.NewQueued.text(text, to: toBob.id, on: context)
            }
            let senders = batch.map { new in Task { try await drain.handOver(new) } }
            try await waitUntil { diagnostics.record.handedOver == batch.count }
            let before = store.commitCounts.count
            let queued = await drain.queueHandedOver()
            #expect(store.commitCounts.count == before + 1, "one commit for all")
            #expect(queued.map(\.message.id) == [batch[0].message.id, batch[1].message.id])
            #expect(diagnostics.record.handedOver == 0)

            let first = try await senders[0].value
            let second = try await senders[1].value
            #expect(first.message.text == "one" && second.message.text == "two")
            #expect(first.commit == before + 1 && second.commit == before + 1)
            await #expect(throws: SendingContexts.Stale.self) { try await senders[2].value }
            #expect(try store.outbox().map(\.message.text) == ["one", "two"])
            #expect(try !store.history(with: toBob.id, limit: 10).contains { $0.text == "stale" })
        }
    }

    @Test(
        "senders while a window waits for the relay hand their messages to it: queued by the window, each sent, all arriving once in the order stored"
    )
    func sendsHandedToAWaitingWindow() async throws {
        try await Self.liveWithLockableRelay { alice, bob, toBob, lockRelay in
            let diagnostics = alice.diagnostics
            let lock = try lockRelay()
            let first = Task { try await alice.messenger.send("first", to: toBob).status }
            // Its window waits for the relay's answer, which cannot come while the lock is held.
            try await waitUntil { diagnostics.record.windowRunning }
            let count = 8
            let rest = (1...count).map { index in
                Task { try await alice.messenger.send("then \(index)", to: toBob).status }
            }
            try await waitUntil { diagnostics.record.queuedByWindows == count }
            let pending = try await alice.messenger.history(with: toBob.id).filter { $0.status == .pending }
            #expect(pending.count == count + 1, "none sent while the relay could not store")
            lock.release()
            var statuses = [try await first.value]
            for task in rest { statuses.append(try await task.value) }
            #expect(statuses.allSatisfy { $0 == .sent || $0 == .delivered }, "\(statuses)")
            let (stored, received) = try await Self.sentAndReceived(alice, bob)
            #expect(stored.count == count + 2)
            #expect(received == stored)
            await alice.messenger.stopLive()
        }
    }

    @Test(
        "the connection drops while a full window waits for the relay, more queued behind it and more handed to it: once the relay stores again, every message arrives once, in the order stored, and every send answers sent"
    )
    func connectionDropsUnderAFullWindow() async throws {
        try await Self.liveWithLockableRelay { alice, bob, toBob, lockRelay in
            let diagnostics = alice.diagnostics
            // How each send answered; one that never does fails the wait below, not the run.
            let answers = SendAnswers()
            func send(_ text: String) {
                Task {
                    let status = try await alice.messenger.send(text, to: toBob).status
                    await answers.record(status, of: text)
                }
            }
            let lock = try lockRelay()
            send("first")
            try await waitUntil { diagnostics.record.windowRunning }
            // The window's places filled, and 4 queued by it behind them (its refill took them
            // while it filled).
            let queued = StreamWindow.size + 3
            for index in 1...queued { send("then \(index)") }
            try await waitUntil { diagnostics.record.queuedByWindows == queued }
            // Handed to the full window after that: they wait for its next refill.
            let handed = 3
            for index in 1...handed { send("later \(index)") }
            try await waitUntil { diagnostics.record.handedOver == handed }
            // The connection goes with every send of the window unanswered (the relay could not
            // store them): the window ends, queueing what was handed to it. The relay stores what
            // it read once the lock goes; everything goes again over HTTP, and what it stored
            // already is answered as a duplicate.
            await alice.messenger.stopLive()
            lock.release()
            let total = 1 + queued + handed
            try await waitUntil { await answers.statuses.count == total }
            let statuses = await answers.statuses.values
            #expect(statuses.count == total && statuses.allSatisfy { $0 == .sent || $0 == .delivered })
            #expect(diagnostics.record.sentInWindows == 0, "no answer came to the window")
            #expect(diagnostics.record.queuedByWindows == queued + handed)
            let (stored, received) = try await Self.sentAndReceived(alice, bob)
            #expect(stored.count == total + 1)
            #expect(received == stored)
        }
    }

    @Test(
        "files sent at once while a window of sends runs: each send's progress hears of its own file's upload and of no other"
    )
    func uploadProgressPerSend() async throws {
        try await Self.liveWithLockableRelay { alice, bob, toBob, lockRelay in
            let diagnostics = alice.diagnostics
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-files-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let lock = try lockRelay()
            let first = Task { try await alice.messenger.send("first", to: toBob).status }
            try await waitUntil { diagnostics.record.windowRunning }
            let names = ["a.bin", "b.bin"]
            let logs = names.map { _ in ProgressLog() }
            var sends: [Task<ChatMessage.Status, any Error>] = []
            for (index, name) in names.enumerated() {
                let file = directory.appendingPathComponent(name)
                try Data(repeating: UInt8(index), count: 600_000).write(to: file)
                let log = logs[index]
                sends.append(
                    Task {
                        try await alice.messenger.send(
                            name, attachments: [AttachmentSource(url: file)], to: toBob, progress: log.append
                        ).status
                    })
            }
            // Both handed to the window, which uploads their files once the relay stores again.
            try await waitUntil {
                let queued = diagnostics.record.queuedByWindows
                return queued + diagnostics.record.handedOver == names.count
            }
            lock.release()
            var statuses = [try await first.value]
            for send in sends { statuses.append(try await send.value) }
            #expect(statuses.allSatisfy { $0 == .sent || $0 == .delivered }, "\(statuses)")
            for (name, log) in zip(names, logs) {
                let heard = log.entries
                #expect(heard.allSatisfy { $0.name == name }, "\(name): \(heard.map(\.name))")
                #expect(heard.contains { $0.stage == .uploading && $0.done == $0.total }, "\(name): \(heard)")
            }
            let (stored, received) = try await Self.sentAndReceived(alice, bob)
            #expect(received == stored)
            await alice.messenger.stopLive()
        }
    }

    @Test(
        "many senders at once over the live stream: every message arrives once, in the order the sender stored them, and each send answers sent"
    )
    func concurrentSendsOverTheStream() async throws {
        try await KitUser.pairOnRelay { relay, alice, bob in
            let toBob = try await alice.messenger.contact(email: bob.email)
            #expect(await alice.messenger.goLive())
            // The first message starts the session (a prekey bundle); the rest go while
            // windows run.
            _ = try await alice.messenger.send("start", to: toBob)
            let count = 40
            let statuses = try await withThrowingTaskGroup(of: ChatMessage.Status.self) { group in
                for index in 1...count {
                    group.addTask { try await alice.messenger.send("message \(index)", to: toBob).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .sent || $0 == .delivered }, "\(statuses)")
            let (stored, received) = try await Self.sentAndReceived(alice, bob)
            #expect(stored.count == count + 1)
            #expect(received == stored)
            await alice.messenger.stopLive()
        }
    }
}

extension WindowHandOverTests {
    /// A relay on SQLite whose writes wait for another process's lock on its file as long as the
    /// test holds it (`lockRelay`), and Alice live, her session with Bob started (its first
    /// message, from a prekey bundle, sent).
    static func liveWithLockableRelay(
        _ body: (_ alice: KitUser, _ bob: KitUser, _ toBob: Contact, _ lockRelay: () throws -> RelayFileLock)
            async throws -> Void
    ) async throws {
        try await TestRelay.run(adjust: { $0.sqliteBusyTimeoutMilliseconds = 120_000 }) { relay in
            guard case .sqlite(let path) = relay.database else { throw NotSQLite() }
            try await KitUser.pair(relay) { alice, bob in
                let toBob = try await alice.messenger.contact(email: bob.email)
                #expect(await alice.messenger.goLive())
                _ = try await alice.messenger.send("start", to: toBob)
                try await body(alice, bob, toBob, { try RelayFileLock(path: path) })
            }
        }
    }

    /// Alice's outgoing lines to Bob as her store holds them (oldest first: the order they went),
    /// and Bob's as he receives them, once as many have come.
    static func sentAndReceived(_ alice: KitUser, _ bob: KitUser) async throws -> (stored: [String], received: [String])
    {
        let stored = try await alice.messenger.history(with: await bob.messenger.me, limit: 100).compactMap {
            $0.direction == .outgoing ? $0.text : nil
        }
        var received: [String] = []
        try await waitUntil {
            received += try await bob.messenger.sync().compactMap(\.text)
            return received.count >= stored.count
        }
        return (stored, received)
    }
}

private struct NotSQLite: Error {}

/// What a send's progress callback heard, in order.
private final class ProgressLog: Sendable {
    private let heard = Mutex<[AttachmentProgress]>([])

    var entries: [AttachmentProgress] { heard.withLock { $0 } }

    @Sendable func append(_ progress: AttachmentProgress) { heard.withLock { $0.append(progress) } }
}

/// How each of a test's sends answered, by text.
private actor SendAnswers {
    private(set) var statuses: [String: ChatMessage.Status] = [:]

    func record(_ status: ChatMessage.Status, of text: String) { statuses[text] = status }
}

/// The relay's database file locked for writing by another process (Python's `sqlite3`), as a
/// backup or a `sqlite3` shell would hold it, until `release`. Another process: SQLite's locks
/// are the file's POSIX locks, which never stand between two connections of the same process
/// opened by two copies of SQLite (the relay's and GRDB's).
final class RelayFileLock {
    private let process = Process()
    private let input = Pipe()

    static let script = """
        import sqlite3, sys
        connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
        connection.execute("BEGIN IMMEDIATE")
        print("locked", flush=True)
        sys.stdin.read()
        connection.execute("ROLLBACK")
        """

    init(path: String) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.script, path]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var said = Data()
        while !String(decoding: said, as: UTF8.self).contains("locked") {
            let more = output.fileHandleForReading.availableData
            guard !more.isEmpty else { throw ConfidantKitError.storeDamaged("python3 could not lock \(path)") }
            said += more
        }
    }

    func release() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    deinit { if process.isRunning { release() } }
}
