import ConfidantServer
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// `RelayAdministration.backup` and `RelayRestore`: a copy taken while the relay stores messages
/// restores into a new data directory whose relay delivers all that was stored before it.
@Suite("Relay backup")
struct RelayBackupTests {
    /// The message ids a sender has had stored, in order.
    actor SentLog {
        private(set) var ids: [String] = []
        var stop = false
        func append(_ id: String) { ids.append(id) }
        func finish() { stop = true }
    }

    @Test("a backup taken while messages arrive restores into a relay that delivers every one stored before it")
    func underLoad() async throws {
        let backup = Self.scratch("backup")
        let restoredDirectory = Self.scratch("restored")
        defer { for url in [backup, restoredDirectory] { try? FileManager.default.removeItem(at: url) } }
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let vault = Data((0..<300_000).map { _ in UInt8.random(in: 0...255) })
            _ = try await alice.client.putBackupObject(path: .init(name: "vault"), body: .binary(HTTPBody(vault))).ok
            let log = SentLog()
            let recipients = [(bob.address, bob.identity.publicIdentity)]
            // Four senders at once, so the snapshot runs between commits of the writer.
            let load = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            while await !log.stop {
                                let receipt = try await alice.send("one of many", to: recipients)
                                await log.append(receipt.messageId.lowercased())
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            while await log.ids.count < 20 { try await Task.sleep(for: .milliseconds(5)) }
            let storedBefore = await log.ids
            let manifest = try await relay.server.administration(as: "test").backup(to: backup)
            let extra = await log.ids.count
            while await log.ids.count < extra + 20 { try await Task.sleep(for: .milliseconds(5)) }
            await log.finish()
            try await load.value
            let allSent = await log.ids
            #expect(manifest.blobs.count == 1 && manifest.blobs.first?.size == 300_000, "\(manifest)")
            #expect(manifest.blobsGoneDuringBackup == 0)
            let mode = try FileManager.default.attributesOfItem(atPath: backup.path)[.posixPermissions] as? Int
            #expect(mode == 0o700, "the backup holds every account's data")
            #expect(try await relay.server.administration(as: "test").audit().first?.action == "backup")

            let restoredManifest = try RelayRestore.restore(
                from: backup, into: .embedded(dataDirectory: restoredDirectory))
            #expect(restoredManifest.database == manifest.database && restoredManifest.blobs == manifest.blobs)
            let restored = try await TestRelay.start(directory: restoredDirectory)
            do {
                // The sessions and the key that signs them came along: bob's token works there.
                let client = restored.client(token: bob.token)
                var delivered: [String] = []
                var after: Int64 = 0
                while true {
                    let page = try await client.fetchMailbox(query: .init(after: after, limit: 500)).ok.body.json
                    for entry in page.entries { delivered.append(try #require(entry.messageId).lowercased()) }
                    after = page.entries.last?.cursor ?? after
                    if !page.hasMore { break }
                }
                #expect(
                    Set(storedBefore).isSubset(of: Set(delivered)), "\(storedBefore.count) before, \(delivered.count)")
                #expect(Set(delivered).isSubset(of: Set(allSent)))
                #expect(delivered.count < allSent.count, "what came after the backup is not in it")
                let body = try await restored.client(token: alice.token).getBackupObject(path: .init(name: "vault"))
                    .ok.body.binary
                #expect(try await Data(collecting: body, upTo: 1 << 20) == vault)
            } catch {
                await restored.stop()
                throw error
            }
            await restored.stop()
        }
    }

    @Test("a blob the relay removes while the backup copies is left out of the copy, and its object with it")
    func blobRemovedMeanwhile() async throws {
        let backup = Self.scratch("backup")
        let restoredDirectory = Self.scratch("restored")
        defer { for url in [backup, restoredDirectory] { try? FileManager.default.removeItem(at: url) } }
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            for name in ["first", "second"] {
                _ = try await alice.client.putBackupObject(path: .init(name: name), body: .binary(HTTPBody([1, 2]))).ok
            }
            let live = relay.directory.appendingPathComponent("blobs")
            let copies = backup.appendingPathComponent("blobs")
            // After the first file is copied, the other goes, as when its last recipient fetches it.
            let manifest = try await relay.server.administration(as: "test").backup(to: backup) { copied, _ in
                guard copied == 1, let names = try? FileManager.default.contentsOfDirectory(atPath: live.path) else {
                    return
                }
                for name in names
                where !FileManager.default.fileExists(atPath: copies.appendingPathComponent(name).path) {
                    try? FileManager.default.removeItem(at: live.appendingPathComponent(name))
                }
            }
            #expect(manifest.blobs.count == 1 && manifest.blobsGoneDuringBackup == 1, "\(manifest)")
            _ = try RelayRestore.restore(from: backup, into: .embedded(dataDirectory: restoredDirectory))
            let restored = try await TestRelay.start(directory: restoredDirectory)
            let listed = try await restored.client(token: alice.token).listBackupObjects().ok.body.json.objects
            await restored.stop()
            #expect(listed.count == 1, "only the object whose bytes were copied: \(listed)")
        }
    }

    @Test("backup and restore refuse to overwrite, and a damaged or unfinished backup restores nothing")
    func refusals() async throws {
        let backup = Self.scratch("backup")
        let target = Self.scratch("target")
        defer { for url in [backup, target] { try? FileManager.default.removeItem(at: url) } }
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            _ = try await alice.client.putBackupObject(path: .init(name: "vault"), body: .binary(HTTPBody([1, 2, 3])))
                .ok
            let admin = relay.server.administration(as: "test")
            let full = Self.scratch("full")
            try FileManager.default.createDirectory(at: full, withIntermediateDirectories: true)
            try Data([1]).write(to: full.appendingPathComponent("x"))
            defer { try? FileManager.default.removeItem(at: full) }
            await #expect(throws: RelayBackupError.outputNotEmpty(full.path)) { try await admin.backup(to: full) }
            #expect(FileManager.default.fileExists(atPath: full.appendingPathComponent("x").path))

            let manifest = try await admin.backup(to: backup)
            #expect(throws: RelayBackupError.self, "the relay's own directory holds a relay") {
                try RelayRestore.restore(from: backup, into: relay.server.configuration)
            }
            // One flipped byte in the blob: refused, and the target keeps nothing of the attempt.
            let blob = backup.appendingPathComponent("blobs").appendingPathComponent(
                try #require(manifest.blobs.first).id.uuidString.lowercased())
            var bytes = try Data(contentsOf: blob)
            bytes[0] ^= 1
            try bytes.write(to: blob)
            let error = #expect(throws: RelayBackupError.self) {
                try RelayRestore.restore(from: backup, into: .embedded(dataDirectory: target))
            }
            #expect(error?.description.contains("damaged") == true, "\(String(describing: error))")
            let left = try FileManager.default.subpathsOfDirectory(atPath: target.path).filter {
                !$0.hasSuffix("blobs")
            }
            #expect(left.isEmpty, "\(left)")

            // A manifest of a newer schema, and none at all.
            let manifestFile = backup.appendingPathComponent(RelayBackupManifest.fileName)
            let text = try String(contentsOf: manifestFile, encoding: .utf8)
            try text.replacingOccurrences(of: "\"migrations\" : \(manifest.migrations)", with: "\"migrations\" : 999")
                .write(to: manifestFile, atomically: true, encoding: .utf8)
            #expect(throws: RelayBackupError.self) {
                try RelayRestore.restore(from: backup, into: .embedded(dataDirectory: target))
            }
            try FileManager.default.removeItem(at: manifestFile)
            #expect(throws: RelayBackupError.notABackup(backup.path)) {
                try RelayRestore.restore(from: backup, into: .embedded(dataDirectory: target))
            }
        }
    }

    @Test("on PostgreSQL the backup says to use pg_dump")
    func postgresRefused() async throws {
        try await TestRelay.run(.postgres) { relay in
            let out = Self.scratch("pg")
            await #expect(throws: RelayBackupError.postgres) {
                try await relay.server.administration(as: "test").backup(to: out)
            }
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
    }

    static func scratch(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("confidant-\(name)-\(UUID())")
    }
}
