import ConfidantAPI
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Free space where the relay writes: attachments and backups are refused once it drops below the
/// floor, so that the last of the disk goes to messages (small, and what users wait for).
struct DiskSpace: Sendable {
    let directory: URL
    /// Bytes that must stay free after a blob or backup object is stored.
    let floor: Int64
    /// Reads the free space (`statvfsAvailable` but in tests).
    var probe: @Sendable (URL) -> Int64? = DiskSpace.statvfsAvailable

    /// Bytes an unprivileged process may still write there; nil when the file system does not say.
    func available() -> Int64? { probe(directory) }

    /// What `statvfs` says an unprivileged process may still write in `directory`.
    static let statvfsAvailable: @Sendable (URL) -> Int64? = { directory in
        var stats = statvfs()
        guard statvfs(directory.path, &stats) == 0 else { return nil }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    static func low(_ available: Int64) -> APIFailure {
        APIFailure(
            .storageUnavailable,
            "The server is low on disk space (\(available / (1 << 20)) MiB free): it takes no attachments or backups until an operator frees space; messages still go.",
            retryAfter: 60)
    }
}

/// The relay's data directory: its owner's alone (0700; the database and key files in it 0600).
/// A directory other users can write is refused at start: they could replace the database or the
/// key that encrypts sign-in secrets.
public enum DataDirectory {
    /// A data directory the relay will not use, and why.
    public struct Unsafe: Error, CustomStringConvertible {
        public let description: String
    }

    /// Creates `directory` (0700) and its `blobs/` (0700), or checks and tightens existing ones.
    /// - Throws: `Unsafe` when the directory is writable by its group or others.
    static func prepare(_ directory: URL) throws {
        try prepareDirectory(directory)
        try prepareDirectory(BlobFiles.directory(in: directory))
    }

    static func prepareDirectory(_ directory: URL) throws {
        var stats = stat()
        if stat(directory.path, &stats) == 0 {
            guard stats.st_mode & S_IFMT == S_IFDIR else {
                throw Unsafe(description: "\(directory.path) is not a directory.")
            }
            let mode = Int(stats.st_mode) & 0o777
            if mode & 0o022 != 0 {
                throw Unsafe(
                    description:
                        "The data directory \(directory.path) is writable by other users (mode \(String(mode, radix: 8))): they could replace the database or its keys. Run `chmod 700 \(directory.path)` (and check that it belongs to the user running the server), then start again."
                )
            }
            // Readable by others (an older relay made it 0755): the owner's alone from now on.
            if mode != 0o700 { chmod(directory.path, 0o700) }
        } else {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
    }

    /// Creates the SQLite file 0600 before SQLite opens it (SQLite gives its `-wal` and `-shm`
    /// files the database file's mode), or tightens an existing one and its companions.
    static func prepareDatabaseFile(_ path: String) throws {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
            return
        }
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            chmod(file, 0o600)
        }
    }
}
