import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes secret-bearing files: created with mode 0600 from the first byte (never briefly
/// world-readable), flushed, then renamed into place so a crash leaves the old file or the new one.
public enum PrivateFile {
    /// Writes `bytes` to `url` as a file only its owner can read (0600), created with that mode and
    /// moved into place atomically. Unless `overwrite`, an existing file — or anything else at that
    /// path, a dangling link included — is never replaced, even by a writer racing this one (the
    /// file is linked into place, which fails when the name is taken, rather than renamed).
    public static func write<Bytes: DataProtocol>(_ bytes: Bytes, to url: URL, overwrite: Bool) throws {
        let path = url.path
        var status = stat()
        if !overwrite, lstat(path, &status) == 0 {
            throw PrivateFileError.exists(path: path)
        }
        let temporary = path + ".tmp-\(UInt32.random(in: .min ... .max))"
        let fd = Glibc_open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw PrivateFileError.io(path: temporary, errno: errno) }
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        let data = Array(bytes)
        var written = 0
        while written < data.count {
            let n = data.withUnsafeBytes { raw in
                Glibc_write(fd, raw.baseAddress! + written, data.count - written)
            }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                close(fd)
                throw PrivateFileError.io(path: temporary, errno: e)
            }
            written += n
        }
        guard fsync(fd) == 0, close(fd) == 0 else { throw PrivateFileError.io(path: temporary, errno: errno) }
        if overwrite {
            guard rename(temporary, path) == 0 else { throw PrivateFileError.io(path: path, errno: errno) }
        } else {
            guard link(temporary, path) == 0 else {
                throw errno == EEXIST
                    ? PrivateFileError.exists(path: path) : PrivateFileError.io(path: path, errno: errno)
            }
            unlink(temporary)
        }
        ok = true
    }
}

/// Errors writing a private file.
public enum PrivateFileError: Error, Equatable, CustomStringConvertible {
    case exists(path: String)
    case io(path: String, errno: Int32)

    public var description: String {
        switch self {
        case .exists(let path): return "\(path) already exists; refusing to overwrite it (move it away first)"
        case .io(let path, let code): return "cannot write \(path): \(String(cString: strerror(code)))"
        }
    }
}

// `open` and `write` are shadowed by our own static methods in callers; name the C calls plainly.
@inline(__always) private func Glibc_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}

@inline(__always) private func Glibc_write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
