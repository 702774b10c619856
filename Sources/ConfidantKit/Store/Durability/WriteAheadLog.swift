import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The store's SQLite write-ahead log (`<database>-wal`), opened a second time to sync it
/// without SQLite's connection: in WAL mode a commit is durable once the log's file is synced,
/// which is all a synced commit adds to a deferred one. SQLite offers no call that syncs
/// without a write transaction, and a write transaction would hold the one connection (every
/// read of the messenger waits behind it) for the length of the sync. Not safe to call from two
/// threads at once (a descriptor replaced by one may be closed under the other): `LocalStore`
/// calls it on one queue.
final class WriteAheadLog: Sendable {
    let path: String
    private let descriptor = Mutex<Int32>(-1)
    /// Syncs done, for the tests.
    let syncs = Atomic<Int>(0)

    init(path: String) { self.path = path }

    /// The inode of the file last synced (for the tests: a replaced log is opened again).
    var openedInode: UInt64? {
        descriptor.withLock { fd in
            var opened = stat()
            return fd >= 0 && fstat(fd, &opened) == 0 ? UInt64(opened.st_ino) : nil
        }
    }

    deinit {
        let fd = descriptor.withLock { $0 }
        if fd >= 0 { close(fd) }
    }

    /// Syncs the log's file as it is at `path`; false when there is none (nothing written since
    /// SQLite removed it, on closing its last connection, after copying it into the database).
    /// A file replaced since it was opened is opened again: syncing the old one would sync
    /// nothing that matters.
    func sync() throws -> Bool {
        var current = stat()
        guard stat(path, &current) == 0 else {
            if errno == ENOENT { return false }
            throw ConfidantKitError.storeDamaged("the store's log cannot be read (\(String(cString: strerror(errno))))")
        }
        let fd = try descriptor.withLock { fd -> Int32 in
            var opened = stat()
            if fd >= 0, fstat(fd, &opened) == 0, opened.st_ino == current.st_ino, opened.st_dev == current.st_dev {
                return fd
            }
            if fd >= 0 { close(fd) }
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw ConfidantKitError.storeDamaged(
                    "the store's log cannot be opened (\(String(cString: strerror(errno))))")
            }
            return fd
        }
        #if canImport(Darwin)
            let synced = fsync(fd)
        #else
            let synced = fdatasync(fd)
        #endif
        guard synced == 0 else {
            throw ConfidantKitError.storeDamaged(
                "the store's log cannot be synced (\(String(cString: strerror(errno))))")
        }
        syncs.add(1, ordering: .relaxed)
        return true
    }
}
