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
    /// The backup or restore under way, or how the last one ended.
    public private(set) var transfer: VaultTransfer?
    private var vault: Vault?
    private let directory: URL

    /// The vault in `directory` (a profile's `vault/`).
    public init(directory: URL) {
        self.directory = directory
        exists = FileManager.default.fileExists(atPath: directory.appendingPathComponent("vault.sqlite").path)
    }

    /// Creates the vault with `passphrase` (at least 8 characters, typed twice: nothing can open
    /// a vault whose passphrase is lost) and opens it.
    public func create(passphrase: String, confirmation: String) async {
        guard passphrase.count >= 8 else {
            error = "Choose a vault passphrase of at least 8 characters."
            return
        }
        guard passphrase == confirmation else {
            error = "The two passphrases differ. Type the same one twice: nobody can open a vault without it."
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
        return await change(vault) { vault in
            let chapter = try vault.chapters().first { $0.title == title } ?? vault.addChapter(title: title)
            try vault.addItem(
                chapter: chapter.id.canonicalString, text: text, files: files, timestamp: date, progress: progress)
        }
    }

    /// Runs a change off the main actor, then reads the timeline again; `error` says why it failed.
    private func change(_ vault: Vault, _ work: @escaping @Sendable (Vault) throws -> Void) async -> Bool {
        isWorking = true
        defer { isWorking = false }
        do {
            try await Task.detached { try work(vault) }.value
            error = nil
            try await reload()
            return true
        } catch {
            self.error = String(describing: error)
            return false
        }
    }

    /// Changes a memory's text and date; its files stay.
    /// - Parameters:
    ///   - id: the memory.
    ///   - text: the new text; empty removes it (allowed when the memory has files).
    ///   - date: the memory's new date.
    /// - Returns: whether it changed; `error` says why not.
    @discardableResult
    public func editMemory(_ id: UUID, text: String?, date: Date) async -> Bool {
        guard let vault else {
            error = "Unlock the vault first."
            return false
        }
        let trimmed = text.flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 }
        return await change(vault) { vault in
            _ = try vault.editItem(id.canonicalString, text: .some(trimmed), timestamp: date)
        }
    }

    /// The memory with this id, as the timeline shows it.
    public func memory(_ id: UUID) -> Item? {
        for section in timeline {
            if let item = section.items.first(where: { $0.id == id }) { return item }
        }
        return nil
    }

    // MARK: Backup and restore

    /// Backs the open vault up to `target` (the profile's server, a directory), incrementally;
    /// `transfer` follows it and keeps how it ended. One transfer at a time.
    public func backup(to target: any BackupTarget) async {
        guard let vault else {
            error = "Unlock the vault first."
            return
        }
        await run(.backup, target: target) { progress in
            let report = try await vault.backup(to: target, progress: progress)
            return
                "Backed up: \(Self.counted(report.objectsTransferred, "new piece")) sent (\(Self.bytes(report.bytesTransferred))), \(Self.counted(report.objectsSkipped, "piece")) already there."
        }
    }

    /// Rebuilds the vault from a backup on `target` with the backed-up vault's passphrase, into
    /// this (empty) vault directory, and opens it.
    public func restore(from target: any BackupTarget, passphrase: String, backupID: String? = nil) async {
        guard !exists else {
            error = "This profile has a vault already; restore into a profile without one."
            return
        }
        let directory = directory
        await run(.restore, target: target) { progress in
            let (restored, _) = try await Vault.restore(
                from: target, into: directory, passphrase: passphrase, backupID: backupID, progress: progress)
            let status = try restored.status()
            await MainActor.run {
                self.vault = restored
                self.exists = true
            }
            return
                "Restored \(Self.counted(status.items, "memory", plural: "memories")) in \(Self.counted(status.chapters, "chapter"))."
        }
        try? await reload()
    }

    private func run(
        _ kind: VaultTransfer.Kind, target: any BackupTarget,
        _ work: @escaping @Sendable (_ progress: @escaping (BackupProgress) -> Void) async throws -> String
    ) async {
        guard transfer?.outcome != .running else {
            error = "A backup or restore is under way; wait for it to end."
            return
        }
        transfer = VaultTransfer(kind: kind, target: target.description, progress: nil, outcome: .running)
        let (updates, sink) = AsyncStream<BackupProgress>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let following = Task { @MainActor in
            for await progress in updates { self.transfer?.progress = progress }
        }
        let outcome: VaultTransfer.Outcome
        do {
            outcome = .finished(try await Task.detached { try await work { sink.yield($0) } }.value)
        } catch VaultError.wrongPassphrase {
            outcome = .failed("No backup there opens with that passphrase.")
        } catch {
            outcome = .failed(String(describing: error))
        }
        sink.finish()
        await following.value
        transfer?.outcome = outcome
    }

    /// "1 chapter", "3 chapters".
    nonisolated static func counted(_ count: Int, _ noun: String, plural: String? = nil) -> String {
        "\(count) \(count == 1 ? noun : plural ?? noun + "s")"
    }

    private nonisolated static func bytes(_ count: Int) -> String {
        ByteCountFormatter.string(fromByteCount: Int64(count), countStyle: .file)
    }

    /// Removes a memory and the files no other memory uses.
    public func removeMemory(_ id: UUID) async {
        guard let vault else { return }
        _ = await change(vault) { vault in try vault.removeItem(id.canonicalString) }
    }

    /// A media file of the vault and a reader of its plaintext, for showing or streaming it.
    /// - Throws: `VaultError.notFound` for a file the vault does not have.
    public func media(_ id: UUID) throws -> (file: MediaFile, reader: MediaReader) {
        guard let vault else { throw VaultError.locked }
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

/// A vault backup or restore: where it goes, how far it is, how it ended.
public struct VaultTransfer: Sendable, Equatable {
    /// Which way the vault travels.
    public enum Kind: Sendable, Equatable { case backup, restore }
    /// Under way, or ended with a report or a reason.
    public enum Outcome: Sendable, Equatable {
        case running
        case finished(String)
        case failed(String)
    }

    /// Backup or restore.
    public let kind: Kind
    /// The target, in words ("the directory /media/usb/backup").
    public let target: String
    /// The last object taken up; nil before the first.
    public var progress: BackupProgress?
    /// Where it stands.
    public var outcome: Outcome
}
