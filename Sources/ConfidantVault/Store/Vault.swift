import ConfidantCrypto
import Crypto
import Foundation
import GRDB

/// An encrypted journal on disk: `vault.sqlite` (GRDB) plus content-addressed encrypted
/// objects under `objects/`. Everything secret is sealed under the vault key, which is stored
/// only wrapped by the passphrase.
public final class Vault: Sendable {
    /// The vault's directory.
    public let directory: URL
    let database: DatabaseQueue
    let key: VaultKey

    static let databaseName = "vault.sqlite"
    static let objectsName = "objects"

    /// A handle used only to compute object paths while restoring, before a database exists.
    static func unopened(directory: URL) -> ObjectPaths { ObjectPaths(directory: directory) }

    struct ObjectPaths {
        let directory: URL
        func objectURL(_ hash: String) -> URL {
            directory.appendingPathComponent(Vault.objectsName).appendingPathComponent(String(hash.prefix(2)))
                .appendingPathComponent(hash)
        }
    }

    private init(directory: URL, database: DatabaseQueue, key: VaultKey) {
        self.directory = directory
        self.database = database
        self.key = key
    }

    /// Creates a new, empty vault.
    /// - Throws: ``VaultError/alreadyInitialized(path:)`` if one exists there.
    public static func create(at directory: URL, passphrase: String, parameters: ScryptParameters = .interactive) throws
        -> Vault
    {
        let databaseURL = directory.appendingPathComponent(databaseName)
        if FileManager.default.fileExists(atPath: databaseURL.path) {
            throw VaultError.alreadyInitialized(path: directory.path)
        }
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent(objectsName), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let key = VaultKey.generate()
        let wrapped = try key.wrapped(passphrase: passphrase, parameters: parameters)
        let database = try DatabaseQueue(path: databaseURL.path)
        try VaultSchema.migrator.migrate(database)
        try database.write { db in try MetaRecord(wrappedKey: wrapped, createdAt: Date()).insert(db) }
        return Vault(directory: directory, database: database, key: key)
    }

    /// Opens an existing vault; a wrong passphrase is reported before anything is written.
    public static func open(at directory: URL, passphrase: String) throws -> Vault {
        let databaseURL = directory.appendingPathComponent(databaseName)
        guard FileManager.default.fileExists(atPath: databaseURL.path) else {
            throw VaultError.notInitialized(path: directory.path)
        }
        let database = try DatabaseQueue(path: databaseURL.path)
        try VaultSchema.migrator.migrate(database)
        guard let meta = try database.read({ try MetaRecord.fetchOne($0) }) else {
            throw VaultError.corrupted("the vault database has no key record")
        }
        return Vault(
            directory: directory, database: database, key: try VaultKey.unwrap(meta.wrappedKey, passphrase: passphrase))
    }

    /// The wrapped key (for backups).
    func wrappedKey() throws -> Data {
        guard let meta = try database.read({ try MetaRecord.fetchOne($0) }) else {
            throw VaultError.corrupted("no key record")
        }
        return meta.wrappedKey
    }

    /// Re-wraps the vault key under a new passphrase; no content is re-encrypted.
    public func changePassphrase(to newPassphrase: String, parameters: ScryptParameters = .interactive) throws {
        let wrapped = try key.wrapped(passphrase: newPassphrase, parameters: parameters)
        try database.write { db in
            try db.execute(sql: "UPDATE vault_meta SET wrappedKey = ? WHERE id = 1", arguments: [wrapped])
        }
    }

    // MARK: Chapters

    /// Adds a chapter; titles are unique.
    @discardableResult
    public func addChapter(title: String) throws -> Chapter {
        let trimmed = title.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw VaultError.io("a chapter needs a title") }
        if try chapters().contains(where: { $0.title == trimmed }) {
            throw VaultError.io("a chapter named \"\(trimmed)\" exists already")
        }
        let id = UUID()
        let record = ChapterRecord(
            id: id, titleSealed: try SealedText.seal(trimmed, itemID: id, field: "chapter.title", key: key),
            createdAt: Date())
        try database.write { try record.insert($0) }
        return Chapter(id: id, title: trimmed, createdAt: record.createdAt, itemCount: 0)
    }

    /// Every chapter, oldest first, with its item count.
    public func chapters() throws -> [Chapter] {
        let (records, counts) = try database.read { db in
            (
                try ChapterRecord.order(Column("createdAt")).fetchAll(db),
                try Row.fetchAll(db, sql: "SELECT chapterId, COUNT(*) AS n FROM item GROUP BY chapterId")
            )
        }
        var countByChapter: [String: Int] = [:]
        for row in counts { countByChapter[row["chapterId"]] = row["n"] }
        return try records.map { r in
            Chapter(
                id: r.id, title: try SealedText.open(r.titleSealed, itemID: r.id, field: "chapter.title", key: key),
                createdAt: r.createdAt, itemCount: countByChapter[r.id.canonicalString] ?? 0)
        }
    }

    /// Finds a chapter by exact title or by id prefix.
    public func chapter(named reference: String) throws -> Chapter {
        let all = try chapters()
        if let exact = all.first(where: { $0.title == reference }) { return exact }
        let matches = all.filter { $0.id.canonicalString.hasPrefix(reference.lowercased()) }
        guard matches.count == 1, let match = matches.first else {
            throw VaultError.notFound("chapter \"\(reference)\"")
        }
        return match
    }

    /// Renames a chapter (named by title or short id).
    public func renameChapter(_ reference: String, to title: String) throws {
        let chapter = try chapter(named: reference)
        let sealed = try SealedText.seal(title, itemID: chapter.id, field: "chapter.title", key: key)
        try database.write { db in
            try db.execute(
                sql: "UPDATE chapter SET titleSealed = ? WHERE id = ?", arguments: [sealed, chapter.id.canonicalString])
        }
    }

    /// Removes a chapter; one with items is removed only with `force`, and its objects too.
    public func removeChapter(_ reference: String, force: Bool = false) throws {
        let chapter = try chapter(named: reference)
        if chapter.itemCount > 0, !force {
            throw VaultError.io(
                "chapter \"\(chapter.title)\" has \(chapter.itemCount) item(s); remove them first or use --force")
        }
        let hashes = try database.write { db -> [String] in
            let hashes = try String.fetchAll(
                db, sql: "SELECT objectHash FROM media JOIN item ON item.id = media.itemId WHERE item.chapterId = ?",
                arguments: [chapter.id.canonicalString])
            try db.execute(sql: "DELETE FROM chapter WHERE id = ?", arguments: [chapter.id.canonicalString])
            return hashes
        }
        try removeUnreferencedObjects(hashes)
    }

    // MARK: Items

    /// Adds a memory with text and/or files. Files are encrypted first; the database rows are
    /// written in one transaction only when every file is stored, and on failure nothing stays.
    @discardableResult
    public func addItem(
        chapter reference: String, text: String?, files: [URL], timestamp: Date = Date(),
        progress: (String, Int) -> Void = { _, _ in }
    ) throws -> Item {
        guard text != nil || !files.isEmpty else { throw VaultError.io("an item needs text or at least one file") }
        let chapter = try chapter(named: reference)
        let id = UUID()
        var media: [MediaRecord] = []
        var written: [String] = []
        do {
            for (position, file) in files.enumerated() {
                let mediaID = UUID()
                let name = file.lastPathComponent
                let (hash, size) = try storeObject(from: file, objectID: mediaID) { progress(name, $0) }
                written.append(hash)
                media.append(
                    MediaRecord(
                        id: mediaID, itemId: id, position: position,
                        nameSealed: try SealedText.seal(name, itemID: mediaID, field: "media.name", key: key),
                        contentTypeSealed: try SealedText.seal(
                            Self.contentType(of: file), itemID: mediaID, field: "media.contentType", key: key),
                        size: size, objectHash: hash))
            }
            let record = ItemRecord(
                id: id, chapterId: chapter.id, timestamp: timestamp, kind: files.isEmpty ? "text" : "media",
                textSealed: try text.map { try SealedText.seal($0, itemID: id, field: "item.text", key: key) })
            try database.write { db in
                try record.insert(db)
                for m in media { try m.insert(db) }
            }
        } catch {
            try? removeUnreferencedObjects(written)
            throw error
        }
        return try item(id.canonicalString)
    }

    /// Every item (of one chapter, if named), oldest first. One read transaction; each chapter
    /// title is decrypted once, however many items it has.
    public func items(chapter reference: String? = nil) throws -> [Item] {
        let chapterFilter = try reference.map { try chapter(named: $0).id.canonicalString }
        let (records, media, chapters) = try database.read { db -> ([ItemRecord], [MediaRecord], [ChapterRecord]) in
            var request = ItemRecord.order(Column("timestamp"))
            var mediaRequest = MediaRecord.order(Column("position"))
            if let chapterFilter {
                request = request.filter(Column("chapterId") == chapterFilter)
                mediaRequest = mediaRequest.filter(
                    sql: "itemId IN (SELECT id FROM item WHERE chapterId = ?)", arguments: [chapterFilter])
            }
            return (try request.fetchAll(db), try mediaRequest.fetchAll(db), try ChapterRecord.fetchAll(db))
        }
        let mediaByItem = Dictionary(grouping: media, by: \.itemId)
        var titles: [UUID: String] = [:]
        for chapter in chapters {
            titles[chapter.id] = try SealedText.open(
                chapter.titleSealed, itemID: chapter.id, field: "chapter.title", key: key)
        }
        return try records.map { record in
            guard let title = titles[record.chapterId] else {
                throw VaultError.corrupted("item \(record.id) has no chapter")
            }
            return try decrypt(record, media: mediaByItem[record.id] ?? [], chapterTitle: title)
        }
    }

    /// Finds an item by id or id prefix and decrypts it.
    public func item(_ reference: String) throws -> Item {
        let (record, media, chapter) = try database.read { db -> (ItemRecord, [MediaRecord], ChapterRecord?) in
            let matches = try ItemRecord.filter(sql: "lower(id) LIKE ?", arguments: [reference.lowercased() + "%"])
                .limit(2).fetchAll(db)
            guard matches.count == 1, let record = matches.first else {
                throw VaultError.notFound(
                    matches.isEmpty ? "item \"\(reference)\"" : "a unique item for \"\(reference)\" (give more digits)")
            }
            return (
                record,
                try MediaRecord.filter(Column("itemId") == record.id.canonicalString).order(Column("position"))
                    .fetchAll(db),
                try ChapterRecord.fetchOne(db, key: record.chapterId.canonicalString)
            )
        }
        guard let chapter else { throw VaultError.corrupted("item \(record.id) has no chapter") }
        return try decrypt(
            record, media: media,
            chapterTitle: SealedText.open(chapter.titleSealed, itemID: chapter.id, field: "chapter.title", key: key))
    }

    private func decrypt(_ record: ItemRecord, media: [MediaRecord], chapterTitle: String) throws -> Item {
        Item(
            id: record.id, chapterID: record.chapterId, chapterTitle: chapterTitle,
            timestamp: record.timestamp, kind: record.kind,
            text: try record.textSealed.map {
                try SealedText.open($0, itemID: record.id, field: "item.text", key: key)
            },
            media: try media.map { m in
                MediaFile(
                    id: m.id, name: try SealedText.open(m.nameSealed, itemID: m.id, field: "media.name", key: key),
                    contentType: try SealedText.open(
                        m.contentTypeSealed, itemID: m.id, field: "media.contentType", key: key),
                    size: m.size, objectHash: m.objectHash)
            })
    }

    /// Changes a memory's text, date or both; its files stay as they are.
    /// - Parameters:
    ///   - reference: the item's id (or a unique prefix).
    ///   - text: the new text; `.some(nil)` removes the text, which only a memory with files may lose.
    ///   - timestamp: the new date; unchanged when nil.
    /// - Returns: the memory as stored now.
    @discardableResult
    public func editItem(_ reference: String, text: String?? = nil, timestamp: Date? = nil) throws -> Item {
        let item = try item(reference)
        var record = ItemRecord(
            id: item.id, chapterId: item.chapterID, timestamp: timestamp ?? item.timestamp, kind: item.kind,
            textSealed: nil)
        let newText = text ?? item.text
        guard newText != nil || !item.media.isEmpty else {
            throw VaultError.io("a memory without files needs its text; remove the memory instead")
        }
        record.textSealed = try newText.map { try SealedText.seal($0, itemID: item.id, field: "item.text", key: key) }
        try database.write { db in try record.update(db) }
        return try self.item(item.id.canonicalString)
    }

    /// Removes a memory and the files no other memory uses.
    public func removeItem(_ reference: String) throws {
        let item = try item(reference)
        try database.write { db in _ = try ItemRecord.deleteOne(db, key: item.id.canonicalString) }
        try removeUnreferencedObjects(item.media.map(\.objectHash))
    }

    /// Counts and sizes.
    public func status() throws -> VaultStatus {
        try database.read { db in
            let sizes = try Int.fetchAll(db, sql: "SELECT size FROM media")
            return VaultStatus(
                chapters: try ChapterRecord.fetchCount(db), items: try ItemRecord.fetchCount(db),
                mediaFiles: sizes.count,
                plaintextBytes: sizes.reduce(0, +),
                objectBytes: sizes.reduce(0) { $0 + MediaStream.encryptedSize(plaintext: $1) })
        }
    }

    // MARK: Objects

    func objectURL(_ hash: String) -> URL { ObjectPaths(directory: directory).objectURL(hash) }

    /// Encrypts a file into the object store, named by its ``ObjectAddress``.
    func storeObject(from file: URL, objectID: UUID, progress: (Int) -> Void) throws -> (hash: String, size: Int) {
        let staging = directory.appendingPathComponent(Self.objectsName).appendingPathComponent(
            "staging-\(UUID().uuidString)")
        let (size, hash) = try MediaStream.encryptFile(
            at: file, to: staging, key: key, objectID: objectID, progress: progress)
        do {
            let destination = objectURL(hash)
            try FileManager.default.createDirectory(
                at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.moveItem(at: staging, to: destination)
            return (hash, size)
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
    }

    func removeUnreferencedObjects(_ hashes: [String]) throws {
        for hash in Set(hashes) {
            let referenced = try database.read { try MediaRecord.filter(Column("objectHash") == hash).fetchCount($0) }
            if referenced == 0 { try? FileManager.default.removeItem(at: objectURL(hash)) }
        }
    }

    /// Whether a stored object is the one named `hash`, whole and authentic: its address matches
    /// (or, for objects named before addresses covered only header and tags, the SHA-256 of all
    /// its bytes does) and every segment decrypts under the vault key.
    static func objectIsIntact(at url: URL, hash: String, key: VaultKey, objectID: UUID?) -> Bool {
        if (try? ObjectAddress.of(file: url)) == hash {
            guard let objectID else { return false }
            return (try? MediaStream.authenticate(file: url, key: key, objectID: objectID, name: hash)) != nil
        }
        return (try? sha256(of: url)) == hash
    }

    static func sha256(of url: URL) throws -> String {
        guard let handle = try? FileHandle(forReadingFrom: url) else { throw VaultError.io("cannot read \(url.path)") }
        defer { try? handle.close() }
        var hasher = SHA256()
        while true {
            let chunk = try handle.readWhole(upToCount: 1 << 20)
            if chunk.isEmpty { break }
            hasher.update(data: chunk)
        }
        return hasher.finalize().hexString
    }

    /// A file's content type judged by its extension (`application/octet-stream` when unknown).
    public static func contentType(of file: URL) -> String {
        switch file.pathExtension.lowercased() {
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        case "heic": return "image/heic"
        case "gif": return "image/gif"
        case "mov": return "video/quicktime"
        case "mp4", "m4v": return "video/mp4"
        case "webm": return "video/webm"
        case "webp": return "image/webp"
        case "txt", "md": return "text/plain"
        case "pdf": return "application/pdf"
        default: return "application/octet-stream"
        }
    }
}
