import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

/// A plain directory (a USB disk, a mounted share) as a backup target. Everything it writes is
/// its owner's alone: directories 0700, files 0600 (ciphertext, but names and sizes say how
/// large the journal is and when it changed).
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

    /// Creates the directories down to `name`'s, private to their owner.
    private func makeDirectories(for destination: URL) throws {
        var missing: [URL] = []
        var directory = destination.deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.path), directory.path != "/" {
            missing.append(directory)
            directory = directory.deletingLastPathComponent()
        }
        for directory in missing.reversed() {
            do {
                try FileManager.default.createDirectory(
                    at: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            } catch CocoaError.fileWriteFileExists {
                // Made meanwhile by another writer.
            } catch {
                throw VaultError.io(
                    "could not create \(directory.path) for \(description): \(error.localizedDescription)")
            }
        }
    }

    /// Copies the file in under `name`, atomically.
    public func upload(_ file: URL, as name: String) throws {
        let destination = try url(name)
        try makeDirectories(for: destination)
        let partial = destination.appendingPathExtension("partial-\(UUID().uuidString)")
        do {
            try FileManager.default.copyItem(at: file, to: partial)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: partial.path)
            try Self.replace(destination, with: partial)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw VaultError.io("could not upload \(name) to \(description): \(error.localizedDescription)")
        }
    }

    /// Puts `source` at `destination` in one step, replacing what is there (rename(2)): a reader
    /// sees the old object or the new one, never a part.
    private static func replace(_ destination: URL, with source: URL) throws {
        guard
            source.withUnsafeFileSystemRepresentation({ from in
                destination.withUnsafeFileSystemRepresentation { to in
                    guard let from, let to else { return false }
                    #if canImport(Glibc)
                        return Glibc.rename(from, to) == 0
                    #else
                        return Darwin.rename(from, to) == 0
                    #endif
                }
            })
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: destination.path]) }
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

    /// Writes a small object, atomically: created 0600 under a temporary name, then renamed.
    public func write(_ data: Data, as name: String) throws {
        let destination = try url(name)
        try makeDirectories(for: destination)
        let partial = destination.appendingPathExtension("partial-\(UUID().uuidString)")
        guard
            FileManager.default.createFile(atPath: partial.path, contents: data, attributes: [.posixPermissions: 0o600])
        else { throw VaultError.io("could not write \(name) to \(description)") }
        do {
            try Self.replace(destination, with: partial)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw VaultError.io("could not write \(name) to \(description): \(error.localizedDescription)")
        }
    }
}
