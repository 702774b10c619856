import ConfidantCrypto
import Crypto
import Foundation

/// Copies one file in 1 MiB chunks (never whole in memory), hashing what it copies, and flushes
/// the copy to disk: the backup's and the restore's one way to move bytes. `FileManager.copyItem`
/// would copy without the digest, which both need to prove the copy matches.
enum HashedFileCopy {
    static let chunkBytes = 1 << 20

    struct Copied: Equatable {
        let size: Int64
        let sha256: String
    }

    /// Copies `source` to the new file `target` (0600), or throws `CocoaError(.fileNoSuchFile)`
    /// when `source` is gone; a target that exists is an error, never overwritten.
    static func copy(_ source: URL, to target: URL) throws -> Copied {
        guard let input = try? FileHandle(forReadingFrom: source) else { throw CocoaError(.fileNoSuchFile) }
        defer { try? input.close() }
        guard !FileManager.default.fileExists(atPath: target.path),
            FileManager.default.createFile(atPath: target.path, contents: nil, attributes: [.posixPermissions: 0o600])
        else {
            throw CocoaError(.fileWriteFileExists, userInfo: [NSFilePathErrorKey: target.path])
        }
        do {
            let output = try FileHandle(forWritingTo: target)
            defer { try? output.close() }
            let copied = try read(input, into: output)
            try output.synchronize()
            return copied
        } catch {
            try? FileManager.default.removeItem(at: target)
            throw error
        }
    }

    /// The size and SHA-256 of a file, read in chunks.
    static func digest(of file: URL) throws -> Copied {
        let input = try FileHandle(forReadingFrom: file)
        defer { try? input.close() }
        return try read(input, into: nil)
    }

    /// Reads `input` to its end, writing each chunk to `output` when given.
    private static func read(_ input: FileHandle, into output: FileHandle?) throws -> Copied {
        var hasher = SHA256()
        var size: Int64 = 0
        while let chunk = try input.read(upToCount: chunkBytes), !chunk.isEmpty {
            hasher.update(data: chunk)
            try output?.write(contentsOf: chunk)
            size += Int64(chunk.count)
        }
        return Copied(size: size, sha256: hasher.finalize().hexString)
    }
}
