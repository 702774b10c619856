import ConfidantAPI
import Foundation
import OpenAPIRuntime

/// The bytes of blobs and backup objects in `<data-dir>/blobs/<id>`: streamed to disk as they
/// arrive (never held in memory) and streamed back in chunks. The store of a relay on SQLite.
struct BlobFiles: BlobStore {
    let directory: URL
    let intake: BlobIntake

    init(
        directory: URL, minimumFreeBytes: Int64, pace: UploadPace,
        freeSpace: @escaping @Sendable (URL) -> Int64? = DiskSpace.statvfsAvailable
    ) {
        self.directory = directory
        intake = BlobIntake(
            pace: pace, space: DiskSpace(directory: directory, floor: minimumFreeBytes, probe: freeSpace))
    }

    /// Where a relay with data directory `dataDirectory` keeps blob files.
    static func directory(in dataDirectory: URL) -> URL { dataDirectory.appendingPathComponent("blobs") }

    func url(of id: UUID) -> URL { directory.appendingPathComponent(id.canonicalString) }

    private func partialURL(of id: UUID) -> URL { directory.appendingPathComponent(".\(id.canonicalString).partial") }

    /// Writes the body to a new blob file (0600) through a `.partial` file renamed once synced; a
    /// disk that fills meanwhile is a 503 `storage_unavailable`, never a half-written blob.
    func store(_ body: HTTPBody, limit: Int64, what: String, owner: UUID) async throws -> StoredBlob {
        let id = UUID()
        let partial = partialURL(of: id)
        guard
            FileManager.default.createFile(atPath: partial.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = try? FileHandle(forWritingTo: partial)
        else {
            throw APIFailure(.storageUnavailable, "The server cannot write blobs now; try again later.", retryAfter: 60)
        }
        do {
            defer { try? handle.close() }
            let (size, sha256) = try await intake.receive(body, limit: limit, what: what, owner: owner, id: id) {
                do { try handle.write(contentsOf: $0) } catch { throw BlobIntake.unavailable(error) }
            }
            do {
                try handle.synchronize()
                try FileManager.default.moveItem(at: partial, to: url(of: id))
            } catch {
                throw BlobIntake.unavailable(error)
            }
            return StoredBlob(id: id, size: size, sha256: sha256)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }

    func body(of blob: BlobRecord) throws -> HTTPBody {
        guard let id = blob.id, let handle = try? FileHandle(forReadingFrom: url(of: id)) else {
            throw APIFailure(.storageUnavailable, "The blob's bytes are missing on the server.")
        }
        return .streaming(handle, length: blob.size)
    }

    func remove(_ ids: [UUID]) {
        for id in ids { try? FileManager.default.removeItem(at: url(of: id)) }
    }

    /// Removes the `.partial` files of uploads that stopped with their process (older than
    /// `date`: an upload under way writes to its file at least once a minute at the slowest pace).
    func sweep(before date: Date) throws -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var removed = 0
        for name in names where name.hasPrefix(".") && name.hasSuffix(".partial") {
            let file = directory.appendingPathComponent(name)
            let modified = try? file.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate
            guard let modified, modified < date, (try? FileManager.default.removeItem(at: file)) != nil else {
                continue
            }
            removed += 1
        }
        return removed
    }
}
