import ConfidantCrypto
import Foundation

extension Vault {
    /// How far the export of one file has come.
    public struct FileProgress: Sendable {
        /// The file's name in the vault.
        public let name: String
        /// Plaintext bytes written so far; 0 when the file starts.
        public let done: Int
        /// The file's plaintext size.
        public let total: Int
    }

    /// Decrypts one item into `directory`: `text.txt` for its text, and each media file under its
    /// own name. Existing files are not overwritten. Files appear only when fully verified.
    /// - Returns: the files written.
    @discardableResult
    public func export(_ reference: String, to directory: URL, progress: (FileProgress) -> Void = { _ in })
        throws -> [URL]
    {
        try export(item(reference), to: directory, progress: progress)
    }

    @discardableResult
    func export(_ item: Item, to directory: URL, progress: (FileProgress) -> Void) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var written: [URL] = []
        if let text = item.text {
            let url = directory.appendingPathComponent("text.txt")
            guard !FileManager.default.fileExists(atPath: url.path) else {
                throw VaultError.io("\(url.path) exists; export into an empty directory")
            }
            try Data(text.utf8).write(to: url, options: .atomic)
            written.append(url)
        }
        for media in item.media {
            let name = Self.safeFileName(media.name)
            let url = directory.appendingPathComponent(name)
            guard !FileManager.default.fileExists(atPath: url.path) else {
                throw VaultError.io("\(url.path) exists; export into an empty directory")
            }
            progress(FileProgress(name: media.name, done: 0, total: media.size))
            try MediaStream.decryptFile(
                at: objectURL(media.objectHash), to: url, key: key, objectID: media.id, name: media.name
            ) { done in
                // An empty file was reported whole by its start.
                if done > 0 { progress(FileProgress(name: media.name, done: done, total: media.size)) }
            }
            written.append(url)
        }
        return written
    }

    /// Exports every item as `DIR/<chapter>/<yyyy-MM-dd HHmmss> <short id>/…`.
    @discardableResult
    public func exportAll(to directory: URL, progress: (FileProgress) -> Void = { _ in }) throws -> [URL] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HHmmss"
        var written: [URL] = []
        for item in try items() {
            let folder = directory.appendingPathComponent(Self.safeFileName(item.chapterTitle))
                .appendingPathComponent("\(formatter.string(from: item.timestamp)) \(item.shortID)")
            written += try export(item, to: folder, progress: progress)
        }
        return written
    }

    /// Names come from inside the vault but are still treated as untrusted: no path separators,
    /// no "." or "..", never empty.
    static func safeFileName(_ name: String) -> String {
        let cleaned = name.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "\u{0}", with: "_")
        return cleaned.isEmpty || cleaned == "." || cleaned == ".." ? "_" : cleaned
    }

    /// Decrypts every text and every object, and reports each problem found; one damaged object
    /// does not stop the check of the others.
    public func verify(progress: (String) -> Void = { _ in }) throws -> [VerificationProblem] {
        var problems: [VerificationProblem] = []
        let records = try database.read { db in
            (try ChapterRecord.fetchAll(db), try ItemRecord.fetchAll(db), try MediaRecord.fetchAll(db))
        }
        for chapter in records.0 {
            do {
                _ = try SealedText.open(chapter.titleSealed, itemID: chapter.id, field: "chapter.title", key: key)
            } catch {
                problems.append(
                    .init(item: "chapter \(chapter.id.canonicalString.prefix(8))", reason: "title does not decrypt"))
            }
        }
        for item in records.1 {
            guard let sealed = item.textSealed else { continue }
            do { _ = try SealedText.open(sealed, itemID: item.id, field: "item.text", key: key) } catch {
                problems.append(
                    .init(item: "item \(item.id.canonicalString.prefix(8))", reason: "text does not decrypt"))
            }
        }
        for media in records.2 {
            let name =
                (try? SealedText.open(media.nameSealed, itemID: media.id, field: "media.name", key: key))
                ?? "media \(media.id)"
            progress(name)
            let url = objectURL(media.objectHash)
            guard FileManager.default.fileExists(atPath: url.path) else {
                problems.append(
                    .init(item: name, reason: "encrypted object \(media.objectHash.prefix(12))… is missing"))
                continue
            }
            do {
                guard let handle = try? FileHandle(forReadingFrom: url) else {
                    throw VaultError.io("cannot read \(url.path)")
                }
                defer { try? handle.close() }
                let size = try MediaStream.decrypt(
                    key: key, objectID: media.id, name: name,
                    read: {
                        try handle.readWhole(upToCount: $0)
                    }, write: { _ in })
                if size != media.size {
                    problems.append(
                        .init(item: name, reason: "decrypts to \(size) bytes, catalogue says \(media.size)"))
                }
            } catch let error as VaultError {
                problems.append(.init(item: name, reason: error.description))
            }
        }
        return problems
    }
}
