import ConfidantAPI
import ConfidantTestSupport
import ConfidantVault
import Foundation
import OpenAPIRuntime
import Testing

@testable import ConfidantKit

@Suite("Vault backup to the Confidant server")
struct ServerBackupTests {
    /// A vault with texts and files of the sizes that matter for 64 KiB segments.
    static func makeVault(in directory: URL) throws -> Vault {
        let vault = try Vault.create(
            at: directory.appendingPathComponent("vault"), passphrase: "vault passphrase", parameters: .testing)
        try vault.addChapter(title: "Journeys")
        for (index, size) in [0, 1, 65_535, 65_536, 65_537, 3 * 1024 * 1024 + 7].enumerated() {
            let file = directory.appendingPathComponent("file-\(index).bin")
            try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }).write(to: file)
            try vault.addItem(chapter: "Journeys", text: "the lighthouse memory \(index)", files: [file])
        }
        return vault
    }

    static func files(under root: URL) throws -> [String: Data] {
        var out: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            if try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true {
                out[String(url.path.dropFirst(root.path.count))] = try Data(contentsOf: url)
            }
        }
        return out
    }

    @Test(
        "backup, a second backup that sends only the manifest, restore into a fresh profile byte for byte, nothing readable by others"
    )
    func roundTrip() async throws {
        try await TestRelay.run { relay in
            let alice = try await KitUser.register(relay, name: "Alice")
            let bob = try await KitUser.register(relay, name: "Bob")
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-backup-\(UUID())")
            defer {
                Task {
                    await alice.remove()
                    await bob.remove()
                }
                try? FileManager.default.removeItem(at: scratch)
            }
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            let vault = try Self.makeVault(in: scratch)
            let target = try await RelayBackupTarget(messenger: alice.messenger)

            let first = try await vault.backup(to: target)
            #expect(first.objectsTransferred == 7)  // six media objects and the catalogue
            let second = try await vault.backup(to: target)
            #expect(second.objectsTransferred == 0)
            #expect(second.bytesTransferred < 2_000)

            let (restored, report) = try await Vault.restore(
                from: target, into: scratch.appendingPathComponent("fresh"),
                passphrase: "vault passphrase")
            #expect(report.objectsTransferred == 6)
            try vault.exportAll(to: scratch.appendingPathComponent("original"))
            try restored.exportAll(to: scratch.appendingPathComponent("restored"))
            let original = try Self.files(under: scratch.appendingPathComponent("original"))
            #expect(original.count == 12)
            #expect(try Self.files(under: scratch.appendingPathComponent("restored")) == original)

            // A wrong passphrase is reported before anything is written.
            let wrong = scratch.appendingPathComponent("wrong")
            await #expect(throws: VaultError.wrongPassphrase) {
                try await Vault.restore(from: target, into: wrong, passphrase: "not it")
            }
            #expect(!FileManager.default.fileExists(atPath: wrong.path))

            // Bob's account has no backup, and cannot reach Alice's.
            let bobs = try await RelayBackupTarget(messenger: bob.messenger)
            #expect(try await bobs.list(prefix: "manifests/").isEmpty)
            #expect(try await target.list(prefix: "manifests/") == ["manifests/\(vault.backupID)"])
            await #expect(throws: VaultError.notFound("a backup in \(bobs.description)")) {
                try await Vault.restore(
                    from: bobs, into: scratch.appendingPathComponent("bob"), passphrase: "vault passphrase")
            }

            // The server's files hold ciphertext only.
            let serverFiles = try Self.files(under: relay.directory)
            for (path, data) in serverFiles {
                for needle in ["lighthouse", "Journeys", "file-0.bin"] {
                    #expect(data.range(of: Data(needle.utf8)) == nil, "\(needle) visible in \(path)")
                }
            }
        }
    }

    @Test(
        "backup objects: names are checked, a PUT replaces, HEAD answers, DELETE removes, others get 404",
        arguments: TestDatabaseKind.allCases)
    func objectRoutes(kind: TestDatabaseKind) async throws {
        try await KitUser.pairOnRelay(kind) { relay, alice, bob in
            let aliceToken = try #require(await alice.messenger.account.token)
            let bobToken = try #require(await bob.messenger.account.token)
            let client = relay.client(token: aliceToken)
            let put = try await client.putBackupObject(
                path: .init(name: "manifest"), body: .binary(HTTPBody("first"))
            )
            .ok.body.json
            #expect(put.size == 5)
            _ = try await client.putBackupObject(path: .init(name: "manifest"), body: .binary(HTTPBody("second!")))
            let body = try await client.getBackupObject(path: .init(name: "manifest")).ok.body.binary
            #expect(try await String(collecting: body, upTo: 100) == "second!")
            guard case .ok = try await client.backupObjectExists(path: .init(name: "manifest")) else {
                Issue.record("HEAD did not find it")
                return
            }
            guard
                case .notFound = try await relay.client(token: bobToken).backupObjectExists(
                    path: .init(name: "manifest"))
            else {
                Issue.record("another account sees the object")
                return
            }
            guard
                case .default(let status, _) = try await relay.client(token: bobToken).getBackupObject(
                    path: .init(name: "manifest"))
            else {
                Issue.record("another account read the object")
                return
            }
            #expect(status == 404)
            for bad in [".hidden", "a b", String(repeating: "x", count: 201)] {
                guard
                    case .default(let status, _) = try await client.putBackupObject(
                        path: .init(name: bad), body: .binary(HTTPBody("x")))
                else {
                    Issue.record("\(bad) was accepted")
                    continue
                }
                #expect(status == 400)
            }
            guard case .noContent = try await client.deleteBackupObject(path: .init(name: "manifest")) else {
                Issue.record("not deleted")
                return
            }
            guard case .notFound = try await client.backupObjectExists(path: .init(name: "manifest")) else {
                Issue.record("still there")
                return
            }
            // Without a session nothing is revealed.
            guard
                case .default(let anonymous, _) = try await relay.client().getBackupObject(
                    path: .init(name: "manifest"))
            else { return }
            #expect(anonymous == 401)

            // Listing: by prefix (case-sensitive, `_` is no wildcard), in pages, one's own only.
            for name in ["manifests.b", "manifests.a", "manifests_x", "MANIFESTS.c", "objects.1"] {
                _ = try await client.putBackupObject(path: .init(name: name), body: .binary(HTTPBody("x"))).ok
            }
            func list(_ client: Client, prefix: String?, after: String? = nil, limit: Int? = nil) async throws -> (
                names: [String], hasMore: Bool, status: Int
            ) {
                switch try await client.listBackupObjects(query: .init(prefix: prefix, after: after, limit: limit))
                {
                case .ok(let ok):
                    let page = try ok.body.json
                    return (page.objects.map(\.name), page.hasMore, 200)
                case .default(let status, _): return ([], false, status)
                }
            }
            #expect(try await list(client, prefix: "manifests.").names == ["manifests.a", "manifests.b"])
            let first = try await list(client, prefix: "manifests", limit: 2)
            #expect(first.names == ["manifests.a", "manifests.b"] && first.hasMore)
            let rest = try await list(client, prefix: "manifests", after: "manifests.b", limit: 2)
            #expect(rest.names == ["manifests_x"] && !rest.hasMore)
            #expect(try await list(relay.client(token: bobToken), prefix: "manifests.").names.isEmpty)
            #expect(try await list(client, prefix: "manifests.", limit: 1001).status == 400)
            #expect(try await list(client, prefix: "manifests.", limit: 0).status == 400)
            #expect(try await list(client, prefix: "a'b").status == 400)
            #expect(try await list(relay.client(), prefix: nil).status == 401)
        }
    }
}
