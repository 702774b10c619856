import ConfidantCrypto
import ConfidantVault
import Foundation
import Observation

/// The journal of memories, as the seed's vault screens show it: create or unlock with the
/// vault passphrase, chapters as a timeline with their memories (text and files), add and remove
/// memories, and random-access readers for showing photos and playing videos. Scrypt and file
/// encryption run off the main actor.
@MainActor @Observable
public final class VaultViewModel {
    /// A chapter and its memories, newest first.
    public struct ChapterSection: Sendable, Identifiable {
        public var id: UUID { chapter.id }
        /// The chapter.
        public let chapter: Chapter
        /// Its memories, newest first.
        public let items: [Item]
    }

    /// Whether a vault exists in the directory.
    public private(set) var exists: Bool
    /// Whether it is open.
    public var isUnlocked: Bool { vault != nil }
    /// Chapters with memories, the most recently active first.
    public private(set) var timeline: [ChapterSection] = []
    /// The last thing that went wrong, in words.
    public private(set) var error: String?
    /// A change is under way (unlocking, adding files).
    public private(set) var isWorking = false
    private var vault: Vault?
    private let directory: URL

    /// The vault in `directory` (a profile's `vault/`).
    public init(directory: URL) {
        self.directory = directory
        exists = FileManager.default.fileExists(atPath: directory.appendingPathComponent("vault.sqlite").path)
    }

    /// Creates the vault with `passphrase` (at least 8 characters) and opens it.
    public func create(passphrase: String) async {
        guard passphrase.count >= 8 else {
            error = "Choose a vault passphrase of at least 8 characters."
            return
        }
        await work { [directory] in try Vault.create(at: directory, passphrase: passphrase) }
    }

    /// Opens the vault; a wrong passphrase is reported in `error`.
    public func unlock(passphrase: String) async {
        await work { [directory] in try Vault.open(at: directory, passphrase: passphrase) }
    }

    private func work(_ open: @escaping @Sendable () throws -> Vault) async {
        isWorking = true
        defer { isWorking = false }
        do {
            vault = try await Task.detached(operation: open).value
            exists = true
            error = nil
            try await reload()
        } catch VaultError.wrongPassphrase {
            error = "Wrong vault passphrase. Try again."
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Reads the chapters and memories again.
    public func reload() async throws {
        guard let vault else { return }
        let (chapters, items) = try await Task.detached { (try vault.chapters(), try vault.items()) }.value
        let byChapter = Dictionary(grouping: items, by: \.chapterID)
        timeline = chapters.map { chapter in
            ChapterSection(
                chapter: chapter, items: (byChapter[chapter.id] ?? []).sorted { $0.timestamp > $1.timestamp })
        }
        .sorted {
            ($0.items.first?.timestamp ?? $0.chapter.createdAt) > ($1.items.first?.timestamp ?? $1.chapter.createdAt)
        }
    }

    /// Adds a memory to the chapter titled `chapterTitle` (created when new), encrypting `files`
    /// into the vault; reports progress per file as (name, bytes done).
    /// - Returns: whether it was added; `error` says why not.
    @discardableResult
    public func addMemory(
        chapterTitle: String, text: String?, files: [URL], date: Date = Date(),
        progress: @escaping @Sendable (String, Int) -> Void = { _, _ in }
    ) async -> Bool {
        guard let vault else {
            error = "Unlock the vault first."
            return false
        }
        let title = chapterTitle.trimmingCharacters(in: .whitespacesAndNewlines)
        let text = text.flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 }
        guard !title.isEmpty else {
            error = "Name the chapter this memory belongs to."
            return false
        }
        guard text != nil || !files.isEmpty else {
            error = "A memory needs text or at least one file."
            return false
        }
        isWorking = true
        defer { isWorking = false }
        do {
            try await Task.detached {
                let chapter = try vault.chapters().first { $0.title == title } ?? vault.addChapter(title: title)
                try vault.addItem(
                    chapter: chapter.id.canonicalString, text: text, files: files, timestamp: date, progress: progress)
            }.value
            error = nil
            try await reload()
            return true
        } catch {
            self.error = String(describing: error)
            return false
        }
    }

    /// Removes a memory and the files no other memory uses.
    public func removeMemory(_ id: UUID) async {
        guard let vault else { return }
        do {
            try await Task.detached { try vault.removeItem(id.canonicalString) }.value
            try await reload()
        } catch {
            self.error = String(describing: error)
        }
    }

    /// A media file of the vault and a reader of its plaintext, for showing or streaming it.
    /// - Throws: `VaultError.notFound` for a file the vault does not have.
    public func media(_ id: UUID) throws -> (file: MediaFile, reader: MediaReader) {
        guard let vault else { throw VaultError.notFound("an unlocked vault") }
        for section in timeline {
            for item in section.items {
                if let file = item.media.first(where: { $0.id == id }) {
                    return (file, try vault.mediaReader(for: file))
                }
            }
        }
        throw VaultError.notFound("media file \(id.canonicalString)")
    }

    /// Closes the vault (the key leaves memory with it).
    public func lock() {
        vault = nil
        timeline = []
    }
}
