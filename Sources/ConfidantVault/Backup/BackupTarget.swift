import Foundation

/// Where backups go. A target stores opaque, named blobs; it sees only ciphertext and sizes.
/// Names are content addresses (`objects/<sha256>`, `catalogs/<sha256>`) plus one manifest per
/// vault (`manifests/<backup id>`; older backups have a single `manifest`). Several vaults may
/// share a target: objects are content-addressed, and each vault's manifest has its own name.
public protocol BackupTarget: Sendable {
    /// A human-readable description ("directory /mnt/usb/backup").
    var description: String { get }
    func exists(_ name: String) async throws -> Bool
    /// The names of the objects that start with `prefix` (such as `manifests/`), in name order.
    func list(prefix: String) async throws -> [String]
    /// Stores a local file under `name`; the blob must appear atomically (all or nothing).
    func upload(_ file: URL, as name: String) async throws
    /// Fetches `name` into a local file.
    func download(_ name: String, to file: URL) async throws
    func read(_ name: String) async throws -> Data
    func write(_ data: Data, as name: String) async throws
}

/// A plain directory (a USB disk, a mounted share) as a backup target.
public struct DirectoryBackupTarget: BackupTarget {
    /// The directory holding the backup.
    public let root: URL

    /// A backup in `root` (created on the first backup).
    public init(root: URL) { self.root = root }

    public var description: String { "directory \(root.path)" }

    func url(_ name: String) throws -> URL {
        guard !name.contains(".."), !name.hasPrefix("/") else {
            throw VaultError.io("invalid backup object name \(name)")
        }
        return root.appendingPathComponent(name)
    }

    /// Whether an object of that name is there.
    public func exists(_ name: String) throws -> Bool { FileManager.default.fileExists(atPath: try url(name).path) }

    /// The names under `prefix`, which ends at a directory (`manifests/`) or inside a name.
    public func list(prefix: String) throws -> [String] {
        let slash = prefix.lastIndex(of: "/")
        let directoryPart = slash.map { String(prefix[...$0]) } ?? ""
        let namePrefix = slash.map { String(prefix[prefix.index(after: $0)...]) } ?? prefix
        let directory = directoryPart.isEmpty ? root : try url(directoryPart)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return
            names
            .filter { $0.hasPrefix(namePrefix) && !$0.contains(".partial-") && !$0.hasPrefix(".") }
            .filter { !isDirectory(directory.appendingPathComponent($0)) }
            .map { directoryPart + $0 }
            .sorted()
    }

    private func isDirectory(_ url: URL) -> Bool {
        var directory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &directory) && directory.boolValue
    }

    /// Copies the file in under `name`, atomically.
    public func upload(_ file: URL, as name: String) throws {
        let destination = try url(name)
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        let partial = destination.appendingPathExtension("partial-\(UUID().uuidString)")
        do {
            try FileManager.default.copyItem(at: file, to: partial)
            if FileManager.default.fileExists(atPath: destination.path) {
                try FileManager.default.removeItem(at: destination)
            }
            try FileManager.default.moveItem(at: partial, to: destination)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw VaultError.io("could not upload \(name) to \(description): \(error.localizedDescription)")
        }
    }

    /// Copies the object out to `file`.
    public func download(_ name: String, to file: URL) throws {
        let source = try url(name)
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw VaultError.notFound("\(name) in \(description)")
        }
        if FileManager.default.fileExists(atPath: file.path) { try FileManager.default.removeItem(at: file) }
        try FileManager.default.copyItem(at: source, to: file)
    }

    /// Reads a small object (a manifest or catalogue).
    public func read(_ name: String) throws -> Data {
        do { return try Data(contentsOf: try url(name)) } catch let error as VaultError { throw error } catch {
            throw VaultError.notFound("\(name) in \(description)")
        }
    }

    /// Writes a small object, atomically.
    public func write(_ data: Data, as name: String) throws {
        let destination = try url(name)
        try FileManager.default.createDirectory(
            at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: destination, options: .atomic)
    }
}
