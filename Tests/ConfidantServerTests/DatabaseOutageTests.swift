import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// The database failing under the relay: a typed 503 with `Retry-After`, never `500 internal`,
/// and service again as soon as the database is back.
@Suite("Database outages")
struct DatabaseOutageTests {
    @Test("an outside lock on the SQLite file: sends get 503 database_unavailable with Retry-After, then go through")
    func sqliteLockedByAnotherProcess() async throws {
        try await TestRelay.run(adjust: { $0.sqliteBusyTimeoutMilliseconds = 200 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let recipients = [(bob.address, bob.identity.publicIdentity)]
            guard case .sqlite(let path) = relay.database else { return }

            // Another process takes the write lock and keeps it until told to let go.
            let holder = Process()
            holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            holder.arguments = [
                "python3", "-c",
                """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1], isolation_level=None)
                db.execute("BEGIN EXCLUSIVE")
                print("locked", flush=True)
                sys.stdin.readline()
                db.execute("COMMIT")
                """,
                path,
            ]
            let input = Pipe()
            let output = Pipe()
            holder.standardInput = input
            holder.standardOutput = output
            try holder.run()
            defer { if holder.isRunning { holder.terminate() } }
            let ready = await withCheckedContinuation { continuation in
                Thread {
                    continuation.resume(returning: output.fileHandleForReading.readData(ofLength: 6))
                }.start()
            }
            #expect(String(decoding: ready, as: UTF8.self) == "locked")

            let messageID = UUID()
            let refused = try await alice.client.sendMessage(
                body: .json(try alice.batch("while locked", to: recipients, messageID: messageID)))
            guard case .default(let status, let response) = refused else {
                Issue.record("a send while the database is locked was accepted: \(refused)")
                return
            }
            #expect(status == 503)
            #expect(response.headers.retryAfter == 2)
            if case .json(let problem) = response.body {
                #expect(problem.error == APIErrorCode.databaseUnavailable.rawValue)
            }

            // The lock goes; the same send (same message id) now goes through, once.
            try input.fileHandleForWriting.write(contentsOf: Data("\n".utf8))
            await withCheckedContinuation { continuation in
                Thread {
                    holder.waitUntilExit()
                    continuation.resume()
                }.start()
            }
            _ = try await alice.send("while locked", to: recipients, messageID: messageID)
            let entries = try await bob.client.fetchMailbox(query: .init()).ok.body.json.entries
            #expect(entries.filter { $0.messageId == messageID.canonicalString }.count == 1)
        }
    }
}
