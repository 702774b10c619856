import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantVault

/// A temporary directory removed when the test ends.
struct Scratch {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-vault-\(UUID())")
    init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
    func remove() { try? FileManager.default.removeItem(at: url) }
    func file(_ name: String, _ bytes: [UInt8]) throws -> URL {
        let file = url.appendingPathComponent(name)
        try Data(bytes).write(to: file)
        return file
    }
}

@Suite struct VaultStoreTests {
    @Test func journalRoundTripIsByteIdentical() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let vault = try Vault.create(
            at: scratch.url.appendingPathComponent("vault"), passphrase: "pw", parameters: .testing)
        try vault.addChapter(title: "Summer 2026")
        let sizes = [0, 1, 65_535, 65_536, 65_537, 3_000_000]
        let files = try sizes.map { size in
            try scratch.file("file-\(size).bin", (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ size) })
        }
        let item = try vault.addItem(chapter: "Summer 2026", text: "The sea was warm.", files: files)
        #expect(item.media.count == sizes.count)
        try vault.addItem(chapter: "Summer 2026", text: "Only words.", files: [])

        let out = scratch.url.appendingPathComponent("export")
        var reports: [Vault.FileProgress] = []
        try vault.export(item.shortID, to: out) { reports.append($0) }
        // Each file starts at 0 of its own size, and its last report is its whole size.
        #expect(reports.filter { $0.done == 0 }.map(\.total) == sizes)
        for (size, file) in zip(sizes, files) {
            let own = reports.filter { $0.name == file.lastPathComponent }
            #expect(own.allSatisfy { $0.total == size } && own.last?.done == size, "\(own)")
            #expect(zip(own, own.dropFirst()).allSatisfy { $0.done <= $1.done })
        }
        for (size, file) in zip(sizes, files) {
            #expect(try Data(contentsOf: out.appendingPathComponent("file-\(size).bin")) == Data(contentsOf: file))
        }
        #expect(try String(contentsOf: out.appendingPathComponent("text.txt"), encoding: .utf8) == "The sea was warm.")
        let all = try vault.exportAll(to: scratch.url.appendingPathComponent("all"))
        #expect(all.count == sizes.count + 2)
        #expect(try vault.verify().isEmpty)
        let status = try vault.status()
        #expect(status.items == 2 && status.mediaFiles == sizes.count && status.plaintextBytes == sizes.reduce(0, +))
    }

    @Test func noPlaintextInTheDatabaseOrObjects() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let directory = scratch.url.appendingPathComponent("vault")
        let vault = try Vault.create(at: directory, passphrase: "pw", parameters: .testing)
        try vault.addChapter(title: "Secret chapter title")
        let marker = Array("UNMISTAKABLE-PLAINTEXT-MARKER".utf8)
        try vault.addItem(
            chapter: "Secret chapter title", text: "UNMISTAKABLE-PLAINTEXT-MARKER",
            files: [try scratch.file("secret-name.txt", marker)])
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard let data = try? Data(contentsOf: url), !data.isEmpty else { continue }
            #expect(data.range(of: Data(marker)) == nil, "plaintext in \(url.lastPathComponent)")
            #expect(data.range(of: Data("Secret chapter".utf8)) == nil)
            #expect(data.range(of: Data("secret-name".utf8)) == nil)
        }
    }

    @Test func wrongPassphraseAndPassphraseChange() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let directory = scratch.url.appendingPathComponent("vault")
        let vault = try Vault.create(at: directory, passphrase: "old", parameters: .testing)
        try vault.addChapter(title: "A")
        let before = try Data(contentsOf: directory.appendingPathComponent("vault.sqlite"))
        #expect(throws: VaultError.wrongPassphrase) { try Vault.open(at: directory, passphrase: "nope") }
        #expect(try Data(contentsOf: directory.appendingPathComponent("vault.sqlite")) == before)
        try vault.changePassphrase(to: "new", parameters: .testing)
        #expect(throws: VaultError.wrongPassphrase) { try Vault.open(at: directory, passphrase: "old") }
        #expect(try Vault.open(at: directory, passphrase: "new").chapters().map(\.title) == ["A"])
        #expect(throws: VaultError.alreadyInitialized(path: directory.path)) {
            try Vault.create(at: directory, passphrase: "x", parameters: .testing)
        }
        #expect(throws: VaultError.notInitialized(path: scratch.url.path)) {
            try Vault.open(at: scratch.url, passphrase: "x")
        }
    }

    @Test func listingByChapterKeepsAlbumOrder() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let vault = try Vault.create(
            at: scratch.url.appendingPathComponent("vault"), passphrase: "pw", parameters: .testing)
        try vault.addChapter(title: "A")
        try vault.addChapter(title: "B")
        let names = ["c.jpg", "a.jpg", "b.jpg"]
        let album = try vault.addItem(
            chapter: "A", text: "album", files: try names.map { try scratch.file($0, [1]) },
            timestamp: Date(timeIntervalSince1970: 1_000))
        try vault.addItem(
            chapter: "B", text: "other", files: [try scratch.file("z.jpg", [2])],
            timestamp: Date(timeIntervalSince1970: 2_000))
        try vault.addItem(chapter: "A", text: "words only", files: [], timestamp: Date(timeIntervalSince1970: 3_000))
        let inA = try vault.items(chapter: "A")
        #expect(inA.map(\.text) == ["album", "words only"])
        #expect(inA[0].media.map(\.name) == names)
        #expect(inA[0] == (try vault.item(album.shortID)))
        #expect(try vault.items(chapter: "B").map(\.chapterTitle) == ["B"])
        #expect(try vault.items().count == 3)
    }

    @Test("editing a memory changes its text and date, keeps its files, and never leaves a memory empty")
    func editItem() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let directory = scratch.url.appendingPathComponent("vault")
        let vault = try Vault.create(at: directory, passphrase: "pw", parameters: .testing)
        try vault.addChapter(title: "Summer")
        let photo = try vault.addItem(
            chapter: "Summer", text: "first words", files: [try scratch.file("a.png", [1, 2, 3])],
            timestamp: Date(timeIntervalSince1970: 1_000))
        let note = try vault.addItem(chapter: "Summer", text: "only text", files: [])

        let edited = try vault.editItem(
            photo.shortID, text: .some("EDITED-MARKER words"), timestamp: Date(timeIntervalSince1970: 2_000))
        #expect(edited.text == "EDITED-MARKER words")
        #expect(edited.timestamp == Date(timeIntervalSince1970: 2_000))
        #expect(edited.media.map(\.objectHash) == photo.media.map(\.objectHash), "the files stay")
        let reopened = try Vault.open(at: directory, passphrase: "pw")
        #expect(try reopened.item(photo.shortID).text == "EDITED-MARKER words")
        // The new text is sealed like the old one: nothing readable in the database.
        let database = try Data(contentsOf: directory.appendingPathComponent("vault.sqlite"))
        #expect(database.range(of: Data("EDITED-MARKER".utf8)) == nil)

        // A date alone leaves the text; a memory with files may lose its text; one without may not.
        #expect(
            try vault.editItem(photo.shortID, timestamp: Date(timeIntervalSince1970: 3_000)).text
                == "EDITED-MARKER words")
        #expect(try vault.editItem(photo.shortID, text: .some(nil)).text == nil)
        #expect(throws: VaultError.self) { try vault.editItem(note.shortID, text: .some(nil)) }
        #expect(try vault.item(note.shortID).text == "only text")
        #expect(throws: VaultError.self) { try vault.editItem("ffffffff", text: .some("x")) }
        #expect(try vault.verify().isEmpty)
    }

    @Test func chapters() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let vault = try Vault.create(at: scratch.url, passphrase: "pw", parameters: .testing)
        try vault.addChapter(title: "One")
        #expect(throws: VaultError.self) { try vault.addChapter(title: "One") }
        try vault.renameChapter("One", to: "First")
        try vault.addItem(chapter: "First", text: "x", files: [])
        #expect(throws: VaultError.self) { try vault.removeChapter("First") }
        try vault.removeChapter("First", force: true)
        #expect(try vault.chapters().isEmpty)
        #expect(try vault.items().isEmpty)
    }

    @Test func verifyNamesTheDamagedItemAndChecksTheRest() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let vault = try Vault.create(
            at: scratch.url.appendingPathComponent("vault"), passphrase: "pw", parameters: .testing)
        try vault.addChapter(title: "C")
        let good = try vault.addItem(
            chapter: "C", text: nil, files: [try scratch.file("good.jpg", [UInt8](repeating: 1, count: 100_000))])
        let bad = try vault.addItem(
            chapter: "C", text: nil, files: [try scratch.file("bad.jpg", [UInt8](repeating: 2, count: 200_000))])
        let missing = try vault.addItem(chapter: "C", text: nil, files: [try scratch.file("gone.mov", [3])])
        let badObject = vault.objectURL(bad.media[0].objectHash)
        var bytes = try Data(contentsOf: badObject)
        bytes[MediaStream.headerCount + 65_552 + 5] ^= 0x10
        try bytes.write(to: badObject)
        try FileManager.default.removeItem(at: vault.objectURL(missing.media[0].objectHash))
        let problems = try vault.verify()
        #expect(problems.count == 2)
        #expect(problems.contains { $0.item == "bad.jpg" && $0.reason.contains("segment 2") })
        #expect(problems.contains { $0.item == "gone.mov" && $0.reason.contains("missing") })
        // The good item still exports; the bad one fails with its name and leaves no file behind.
        try vault.export(good.shortID, to: scratch.url.appendingPathComponent("good"))
        #expect(throws: VaultError.tampered(item: "bad.jpg", segment: 2)) {
            try vault.export(bad.shortID, to: scratch.url.appendingPathComponent("bad"))
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.url.appendingPathComponent("bad/bad.jpg").path))
    }

    @Test func failedSaveLeavesNothing() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let vault = try Vault.create(
            at: scratch.url.appendingPathComponent("vault"), passphrase: "pw", parameters: .testing)
        try vault.addChapter(title: "C")
        let exists = try scratch.file("a.jpg", [1, 2, 3])
        #expect(throws: VaultError.self) {
            try vault.addItem(
                chapter: "C", text: "t", files: [exists, scratch.url.appendingPathComponent("no-such-file.jpg")])
        }
        #expect(try vault.items().isEmpty)
        var files: [String] = []
        let enumerator = FileManager.default.enumerator(
            at: scratch.url.appendingPathComponent("vault/objects"), includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                files.append(url.lastPathComponent)
            }
        }
        #expect(files.isEmpty, "left behind: \(files)")
    }
}
