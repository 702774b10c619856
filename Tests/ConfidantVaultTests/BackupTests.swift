import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantVault

/// A directory target that fails every upload or download after a budget: an interrupted run.
final class FlakyTarget: BackupTarget, @unchecked Sendable {
    let inner: DirectoryBackupTarget
    var budget: Int
    init(root: URL, budget: Int) {
        inner = DirectoryBackupTarget(root: root)
        self.budget = budget
    }
    var description: String { "flaky " + inner.description }
    func exists(_ name: String) async throws -> Bool { try inner.exists(name) }
    func spend() throws {
        budget -= 1
        if budget < 0 { throw VaultError.io("connection lost") }
    }
    func upload(_ file: URL, as name: String) async throws {
        try spend()
        try inner.upload(file, as: name)
    }
    func download(_ name: String, to file: URL) async throws {
        try spend()
        try inner.download(name, to: file)
    }
    func read(_ name: String) async throws -> Data { try inner.read(name) }
    func write(_ data: Data, as name: String) async throws { try inner.write(data, as: name) }
}

@Suite struct BackupTests {
    func makeVault(_ scratch: Scratch) throws -> Vault {
        let vault = try Vault.create(
            at: scratch.url.appendingPathComponent("vault"), passphrase: "pw", parameters: .testing)
        try vault.addChapter(title: "Trips")
        try vault.addChapter(title: "Family")
        for index in 0..<4 {
            let file = try scratch.file(
                "photo-\(index).jpg", (0..<(50_000 * (index + 1))).map { UInt8(truncatingIfNeeded: $0 ^ index) })
            try vault.addItem(chapter: index % 2 == 0 ? "Trips" : "Family", text: "memory \(index)", files: [file])
        }
        return vault
    }

    func files(under root: URL) throws -> [String: Data] {
        var out: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            if (try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                out[String(url.path.dropFirst(root.path.count))] = try Data(contentsOf: url)
            }
        }
        return out
    }

    @Test func restoreIntoAFreshProfileIsByteIdentical() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let vault = try makeVault(scratch)
        let target = DirectoryBackupTarget(root: scratch.url.appendingPathComponent("backup"))
        let first = try await vault.backup(to: target)
        #expect(first.objectsTransferred == 5)  // four media objects and the catalogue

        let second = try await vault.backup(to: target)
        #expect(second.objectsTransferred == 0)
        #expect(second.objectsSkipped == 5)
        #expect(second.bytesTransferred < 2_000)  // the manifest only

        let (restored, report) = try await Vault.restore(
            from: target, into: scratch.url.appendingPathComponent("fresh"), passphrase: "pw")
        #expect(report.objectsTransferred == 4)
        try vault.exportAll(to: scratch.url.appendingPathComponent("original-export"))
        try restored.exportAll(to: scratch.url.appendingPathComponent("restored-export"))
        let original = try files(under: scratch.url.appendingPathComponent("original-export"))
        #expect(original.count == 8)
        #expect(try files(under: scratch.url.appendingPathComponent("restored-export")) == original)
        #expect(try restored.verify().isEmpty)
    }

    @Test func targetSeesOnlyCiphertext() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let vault = try makeVault(scratch)
        let root = scratch.url.appendingPathComponent("backup")
        try await vault.backup(to: DirectoryBackupTarget(root: root))
        for (path, data) in try files(under: root) {
            for needle in ["memory 0", "Trips", "photo-0", "Family"] {
                #expect(data.range(of: Data(needle.utf8)) == nil, "\(needle) visible in \(path)")
            }
        }
    }

    @Test func wrongPassphraseIsReportedBeforeAnythingIsWritten() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let target = DirectoryBackupTarget(root: scratch.url.appendingPathComponent("backup"))
        try await makeVault(scratch).backup(to: target)
        let fresh = scratch.url.appendingPathComponent("fresh")
        await #expect(throws: VaultError.wrongPassphrase) {
            try await Vault.restore(from: target, into: fresh, passphrase: "nope")
        }
        #expect(!FileManager.default.fileExists(atPath: fresh.path))
    }

    @Test func alteredManifestIsRejected() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.url.appendingPathComponent("backup")
        try await makeVault(scratch).backup(to: DirectoryBackupTarget(root: root))
        var manifest = try String(contentsOf: root.appendingPathComponent("manifest"), encoding: .utf8)
        manifest = manifest.replacingOccurrences(of: "\"version\":1", with: "\"version\":1 ")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(manifest.utf8)) as? [String: Any])
        var edited = json
        edited["objectHashes"] = Array((json["objectHashes"] as? [String] ?? []).dropLast())
        try JSONSerialization.data(withJSONObject: edited).write(to: root.appendingPathComponent("manifest"))
        await #expect(
            throws: VaultError.corrupted("the backup manifest was altered (its authentication code does not match)")
        ) {
            try await Vault.restore(
                from: DirectoryBackupTarget(root: root), into: scratch.url.appendingPathComponent("fresh"),
                passphrase: "pw")
        }
    }

    @Test func interruptedBackupAndRestoreResume() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let vault = try makeVault(scratch)
        let root = scratch.url.appendingPathComponent("backup")
        await #expect(throws: VaultError.self) { try await vault.backup(to: FlakyTarget(root: root, budget: 2)) }
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("manifest").path))
        #expect(try vault.verify().isEmpty)  // a failed backup leaves the vault intact
        let resumed = try await vault.backup(to: DirectoryBackupTarget(root: root))
        #expect(resumed.objectsSkipped == 2)
        #expect(resumed.objectsTransferred == 3)

        let fresh = scratch.url.appendingPathComponent("fresh")
        await #expect(throws: VaultError.self) {
            try await Vault.restore(from: FlakyTarget(root: root, budget: 3), into: fresh, passphrase: "pw")
        }
        #expect(throws: VaultError.notInitialized(path: fresh.path)) { try Vault.open(at: fresh, passphrase: "pw") }
        let (restored, report) = try await Vault.restore(
            from: DirectoryBackupTarget(root: root), into: fresh, passphrase: "pw")
        #expect(report.objectsSkipped == 3)
        #expect(report.objectsTransferred == 1)
        #expect(try restored.items().count == 4)
    }

    @Test func restoreRejectsAnObjectWithAChangedCiphertextByte() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.url.appendingPathComponent("backup")
        try await makeVault(scratch).backup(to: DirectoryBackupTarget(root: root))
        let objects = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("objects").path)
            .sorted()
        let victim = root.appendingPathComponent("objects").appendingPathComponent(objects[0])
        var bytes = try Data(contentsOf: victim)
        bytes[MediaStream.headerCount + 500] ^= 0x01  // inside the first segment's ciphertext, not a tag
        try bytes.write(to: victim)
        let fresh = scratch.url.appendingPathComponent("fresh")
        await #expect(
            throws: VaultError.corrupted(
                "1 backup object(s) are damaged in directory \(root.path); run restore again after repairing the backup"
            )
        ) {
            try await Vault.restore(from: DirectoryBackupTarget(root: root), into: fresh, passphrase: "pw")
        }
        #expect(throws: VaultError.notInitialized(path: fresh.path)) { try Vault.open(at: fresh, passphrase: "pw") }
    }
}
