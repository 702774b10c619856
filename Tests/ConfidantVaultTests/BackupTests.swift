import ConfidantCrypto
import Crypto
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
    func list(prefix: String) async throws -> [String] { try inner.list(prefix: prefix) }
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

    @Test("a backup directory is its owner's alone: directories 0700, files 0600, manifests and catalogues too")
    func directoryBackupIsPrivate() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.url.appendingPathComponent("usb/backup")
        try await makeVault(scratch).backup(to: DirectoryBackupTarget(root: root))
        var modes: [String: Int] = [:]
        let enumerator = FileManager.default.enumerator(
            at: scratch.url.appendingPathComponent("usb"), includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            let mode = (attributes[.posixPermissions] as? Int ?? 0) & 0o777
            let isDirectory = attributes[.type] as? FileAttributeType == .typeDirectory
            #expect(mode == (isDirectory ? 0o700 : 0o600), "\(url.path) is \(String(mode, radix: 8))")
            modes[url.lastPathComponent] = mode
        }
        #expect(modes["manifests"] == 0o700 && modes["catalogs"] == 0o700 && modes["objects"] == 0o700)
        #expect(modes.count > 4)
        #expect(
            !(try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("manifests").path))
                .contains { $0.contains("partial") }, "no temporary file is left")
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
        let vault = try makeVault(scratch)
        try await vault.backup(to: DirectoryBackupTarget(root: root))
        let manifestURL = root.appendingPathComponent("manifests/\(vault.backupID)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        #expect(json["version"] as? Int == 2)
        let encodedBody = try #require(json["manifest"] as? String)
        let body = try #require(Data(base64Encoded: encodedBody))
        var fields = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        fields["objectHashes"] = Array((fields["objectHashes"] as? [String] ?? []).dropLast())
        var edited = json
        edited["manifest"] = try JSONSerialization.data(withJSONObject: fields).base64EncodedString()
        try JSONSerialization.data(withJSONObject: edited).write(to: manifestURL)
        await #expect(
            throws: VaultError.corrupted("the backup manifest was altered (its authentication code does not match)")
        ) {
            try await Vault.restore(
                from: DirectoryBackupTarget(root: root), into: scratch.url.appendingPathComponent("fresh"),
                passphrase: "pw")
        }
    }

    @Test(
        "a version 2 manifest is authenticated over its stored body: another JSON encoder may rewrite the envelope (escaped slashes, other order)"
    )
    func manifestSurvivesAnotherEncoder() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.url.appendingPathComponent("backup")
        let vault = try makeVault(scratch)
        try await vault.backup(to: DirectoryBackupTarget(root: root))
        let manifestURL = root.appendingPathComponent("manifests/\(vault.backupID)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        // JSONSerialization writes "/" as "\/" and keys in its own order: the bytes change, the meaning not.
        let rewritten = try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted])
        #expect(rewritten != (try Data(contentsOf: manifestURL)))
        try rewritten.write(to: manifestURL)
        let (restored, _) = try await Vault.restore(
            from: DirectoryBackupTarget(root: root), into: scratch.url.appendingPathComponent("fresh"),
            passphrase: "pw")
        #expect(try restored.items().count == (try vault.items().count))
    }

    @Test("a backup made before manifest version 2 (MAC over Foundation's encoding, catalogue unbound) still restores")
    func legacyManifestStillRestores() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.url.appendingPathComponent("backup")
        let target = DirectoryBackupTarget(root: root)
        let vault = try makeVault(scratch)
        try await vault.backup(to: target)
        // Turn it into what the version 1 code wrote: the catalogue sealed without associated
        // data, the manifest JSON with its MAC over Foundation's re-encoding.
        let manifest = try BackupManifest.decode(try target.read("manifests/\(vault.backupID)"))
        let sealed = try target.read("catalogs/\(manifest.catalogHash)")
        let catalogKey = vault.key.derived("backup catalog")
        let plain = try AES.GCM.open(
            try AES.GCM.SealedBox(combined: sealed), using: catalogKey, authenticating: manifest.catalogAssociatedData)
        let legacySealed = try #require(try AES.GCM.seal(plain, using: catalogKey).combined)
        let legacyHash = SHA256.hash(data: legacySealed).map { String(format: "%02x", $0) }.joined()
        try target.write(legacySealed, as: "catalogs/\(legacyHash)")
        var legacy = manifest
        legacy.catalogHash = legacyHash
        let legacyBytes = try legacy.legacyEncoded(with: vault.key)
        #expect(String(decoding: legacyBytes, as: UTF8.self).contains("\"version\":1"))
        try target.write(legacyBytes, as: "manifests/\(vault.backupID)")
        let (restored, _) = try await Vault.restore(
            from: target, into: scratch.url.appendingPathComponent("fresh"), passphrase: "pw")
        #expect(try restored.items().map(\.text) == (try vault.items().map(\.text)))
        // A version 2 manifest pointing at that unbound catalogue is refused: the catalogue is not its.
        var bound = manifest
        bound.catalogHash = legacyHash
        try target.write(try bound.encoded(with: vault.key), as: "manifests/\(vault.backupID)")
        await #expect(throws: VaultError.corrupted("the backup catalogue does not decrypt")) {
            try await Vault.restore(from: target, into: scratch.url.appendingPathComponent("again"), passphrase: "pw")
        }
    }

    /// A second vault (another device's) with its own key and content.
    func makeOtherVault(_ scratch: Scratch, passphrase: String) throws -> Vault {
        let vault = try Vault.create(
            at: scratch.url.appendingPathComponent("other-vault"), passphrase: passphrase, parameters: .testing)
        try vault.addChapter(title: "Garden")
        let file = try scratch.file("tulip.jpg", Array(repeating: 7, count: 70_000))
        try vault.addItem(chapter: "Garden", text: "the tulips", files: [file])
        return vault
    }

    func texts(_ vault: Vault) throws -> [String] {
        try vault.items().compactMap(\.text).sorted()
    }

    @Test("two vaults backing up to one target each keep their own backup, restored by passphrase or backup id")
    func twoVaultsShareATarget() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let target = DirectoryBackupTarget(root: scratch.url.appendingPathComponent("backup"))
        let laptop = try makeVault(scratch)
        let phone = try makeOtherVault(scratch, passphrase: "phone pw")
        #expect(laptop.backupID != phone.backupID)
        try await laptop.backup(to: target)
        try await phone.backup(to: target)
        try await laptop.backup(to: target)  // the laptop's next backup leaves the phone's alone
        #expect(
            try target.list(prefix: "manifests/").sorted()
                == ["manifests/\(laptop.backupID)", "manifests/\(phone.backupID)"].sorted())

        let (restoredLaptop, _) = try await Vault.restore(
            from: target, into: scratch.url.appendingPathComponent("restored-laptop"), passphrase: "pw")
        #expect(try texts(restoredLaptop) == texts(laptop))
        #expect(restoredLaptop.backupID == laptop.backupID, "a restored vault goes on under the same name")
        let (restoredPhone, _) = try await Vault.restore(
            from: target, into: scratch.url.appendingPathComponent("restored-phone"), passphrase: "phone pw")
        #expect(try texts(restoredPhone) == ["the tulips"])

        // The same passphrase on both: restore asks which, and takes the id.
        try phone.changePassphrase(to: "pw", parameters: .testing)
        try await phone.backup(to: target)
        await #expect(throws: VaultError.self) {
            try await Vault.restore(from: target, into: scratch.url.appendingPathComponent("which"), passphrase: "pw")
        }
        do {
            _ = try await Vault.restore(
                from: target, into: scratch.url.appendingPathComponent("which"), passphrase: "pw")
        } catch let VaultError.ambiguousBackup(ids) {
            #expect(ids.sorted() == [laptop.backupID, phone.backupID].sorted())
        }
        let (chosen, _) = try await Vault.restore(
            from: target, into: scratch.url.appendingPathComponent("chosen"), passphrase: "pw", backupID: phone.backupID
        )
        #expect(try texts(chosen) == ["the tulips"])
    }

    @Test(
        "a manifest under this vault's name that it did not write is never replaced; a legacy manifest still restores")
    func anotherVaultsManifestIsLeftAlone() async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.url.appendingPathComponent("backup")
        let target = DirectoryBackupTarget(root: root)
        let laptop = try makeVault(scratch)
        let phone = try makeOtherVault(scratch, passphrase: "phone pw")
        try await laptop.backup(to: target)
        // The laptop's manifest put where the phone's would go (a collision, or a target playing games).
        let laptopManifest = try Data(contentsOf: root.appendingPathComponent("manifests/\(laptop.backupID)"))
        try laptopManifest.write(to: root.appendingPathComponent("manifests/\(phone.backupID)"))
        await #expect(throws: VaultError.backupBelongsToAnotherVault(target: target.description)) {
            try await phone.backup(to: target)
        }
        #expect(try Data(contentsOf: root.appendingPathComponent("manifests/\(phone.backupID)")) == laptopManifest)
        // Restoring from the moved copy by its name is refused too: it names another backup.
        await #expect(throws: VaultError.self) {
            try await Vault.restore(
                from: target, into: scratch.url.appendingPathComponent("moved"), passphrase: "pw",
                backupID: phone.backupID)
        }

        // A backup from before per-vault names (one `manifest`) is found and restored.
        try FileManager.default.removeItem(at: root.appendingPathComponent("manifests"))
        try laptopManifest.write(to: root.appendingPathComponent("manifest"))
        let (restored, _) = try await Vault.restore(
            from: target, into: scratch.url.appendingPathComponent("legacy"), passphrase: "pw")
        #expect(try texts(restored) == texts(laptop))
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
