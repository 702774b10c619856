import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import NIOWebSocket
import OpenAPIRuntime
import Testing

@testable import ConfidantServer

/// The database failing under the relay: a typed 503 with `Retry-After`, never `500 internal`,
/// and service again as soon as the database is back.
@Suite("Database outages")
struct DatabaseOutageTests {
    @Test("password hashes run on each relay's own threads, not on the shared pool that runs the statements")
    func ownHashingThreads() async throws {
        try await TestRelay.run { first in
            try await TestRelay.run { second in
                let pools = [first, second].map { ObjectIdentifier($0.server.services.accounts.passwordHashing) }
                #expect(Set(pools + [ObjectIdentifier(first.server.application.threadPool)]).count == 3)
            }
        }
    }

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
            guard case .json(let problem) = response.body else {
                Issue.record("the 503 has no Problem body: \(response.body)")
                return
            }
            #expect(problem.error == APIErrorCode.databaseUnavailable.rawValue)
            // The readiness check says so (a load balancer stops sending here), with the cause.
            let notReady = try await relay.client().ready()
            guard case .default(let readyStatus, let readyResponse) = notReady else {
                Issue.record("ready while writes fail: \(notReady)")
                return
            }
            #expect(readyStatus == 503 && readyResponse.headers.retryAfter != nil)

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

    @Test("a fresh data directory, its database and blobs are the owner's alone; one others can write is refused")
    func dataDirectoryModes() async throws {
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            _ = try await alice.client.uploadBlob(body: .binary(HTTPBody([1, 2, 3]))).created
            func mode(_ name: String) throws -> Int {
                let attributes = try FileManager.default.attributesOfItem(
                    atPath: relay.directory.appendingPathComponent(name).path)
                return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
            }
            #expect(try mode("") == 0o700)
            #expect(try mode("blobs") == 0o700)
            for name in ["relay.sqlite", "relay.sqlite-wal", "relay.sqlite-shm", "auth.key"] {
                #expect(try mode(name) == 0o600, "\(name)")
            }
            let blobs = try FileManager.default.contentsOfDirectory(
                atPath: relay.directory.appendingPathComponent("blobs").path)
            for blob in blobs { #expect(try mode("blobs/\(blob)") == 0o600, "blob \(blob)") }
            #expect(!blobs.isEmpty)
            _ = try await relay.client().ready().ok
        }
        // Writable by others: refused with a sentence that says what to do. Readable by others
        // (what older relays made): tightened.
        let open = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-open-\(UUID())")
        defer { try? FileManager.default.removeItem(at: open) }
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: open.path)
        var configuration = ServerConfiguration.embedded(dataDirectory: open)
        configuration.port = 0
        await #expect {
            _ = try await RelayServer(configuration: configuration)
        } throws: { error in
            (error as? DataDirectory.Unsafe)?.description.contains("chmod 700") == true
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: open.path)
        let server = try await RelayServer(configuration: configuration)
        await server.shutdown()
        let tightened = try FileManager.default.attributesOfItem(atPath: open.path)[.posixPermissions] as? Int
        #expect(tightened.map { $0 & 0o777 } == 0o700)
    }

    @Test(
        "the device's key cannot be read while a stream's proof is checked: closed as a server error (1011), not as a refused proof (4403) that would sign the device out; then it connects"
    )
    func streamProofWithoutDatabase() async throws {
        // A proof that comes after the limit closes with 4408 instead, whatever the database did:
        // on a busy machine the default 15 s is not far enough.
        try await TestRelay.run(adjust: { $0.streamProofSeconds = 600 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            guard case .sqlite(let path) = relay.database else { return }
            // Another process renames the table of device keys away, then back: reads of it fail.
            func renameDevices(_ from: String, _ to: String) async throws {
                let renamed = try await ChildProcess.run(
                    command: "python3",
                    [
                        "-c",
                        "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute(f'ALTER TABLE {sys.argv[2]} RENAME TO {sys.argv[3]}')",
                        path, from, to,
                    ])
                #expect(renamed.status == 0, "\(renamed.errorText)")
            }
            try await renameDevices("devices", "devices_away")
            let failing = try await StreamClient.connect(port: relay.port, user: alice)
            #expect(try await RevocationTests.closeCode(of: failing) == .unexpectedServerError)

            try await renameDevices("devices_away", "devices")
            let stream = try await StreamClient.connect(port: relay.port, user: alice)
            #expect(await stream.frames.first { $0.caughtUp == true } != nil)
            await stream.close()
        }
    }
}
