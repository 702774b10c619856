import ConfidantAPI
import ConfidantCrypto
import Crypto
import Foundation
import OpenAPIRuntime

/// The bytes of blobs and backup objects in `<data-dir>/blobs/<id>`: streamed to disk as they
/// arrive (never held in memory), hashed on the way, and streamed back in chunks.
struct BlobFiles: Sendable {
    struct Stored: Sendable {
        let id: UUID
        let file: URL
        let size: Int64
        let sha256: String
    }

    let directory: URL
    /// What must stay free on the disk after a blob is stored.
    let space: DiskSpace
    /// The uploads under way, shared by every upload of this instance.
    let reservations = UploadReservations()
    /// How fast an upload's bytes must come.
    let pace: UploadPace

    init(
        directory: URL, minimumFreeBytes: Int64, pace: UploadPace,
        freeSpace: @escaping @Sendable (URL) -> Int64? = DiskSpace.statvfsAvailable
    ) {
        self.directory = directory
        self.pace = pace
        space = DiskSpace(directory: directory, floor: minimumFreeBytes, probe: freeSpace)
    }

    /// Where a relay with data directory `dataDirectory` keeps blob files.
    static func directory(in dataDirectory: URL) -> URL { dataDirectory.appendingPathComponent("blobs") }

    /// How often an upload checks the disk again as it writes.
    static let recheckBytes: Int64 = 8 << 20

    func url(of id: UUID) -> URL { directory.appendingPathComponent(id.canonicalString) }

    /// Writes a request body to a new blob file (0600) for `owner`, refusing it past `limit`
    /// bytes, when the account has `UploadReservations.maximumPerAccount` uploads under way, or
    /// when it would leave less than the free-space floor counting every upload under way (checked
    /// at the start and every `recheckBytes`), or when it falls behind `pace` (408); a disk that
    /// fills meanwhile is a 503 `storage_unavailable`, never a half-written blob.
    func store(_ body: HTTPBody, limit: Int64, what: String, owner: UUID) async throws -> Stored {
        var declared: Int64?
        if case .known(let length) = body.length {
            if length > limit { throw APIFailure.tooLarge(what, limit: Int(limit)) }
            declared = length
        }
        let id = UUID()
        try reservations.begin(id, owner: owner, declared: declared, space: space)
        defer { reservations.end(id) }
        let final = url(of: id)
        let partial = directory.appendingPathComponent(".\(id.canonicalString).partial")
        guard
            FileManager.default.createFile(atPath: partial.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = try? FileHandle(forWritingTo: partial)
        else {
            throw APIFailure(.storageUnavailable, "The server cannot write blobs now; try again later.", retryAfter: 60)
        }
        do {
            defer { try? handle.close() }
            let (size, sha256) = try await pace.enforce { [self] progress in
                try await write(body, to: handle, limit: limit, what: what, upload: id, progress: progress)
            }
            do {
                try handle.synchronize()
                try FileManager.default.moveItem(at: partial, to: final)
            } catch {
                throw APIFailure(
                    .storageUnavailable,
                    "The server could not store that (\(error.localizedDescription)); retry later.",
                    retryAfter: 60)
            }
            return Stored(id: id, file: final, size: size, sha256: sha256)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }

    /// Writes `body` to `handle` as it comes, hashing it and checking the disk every
    /// `recheckBytes`; returns its size and SHA-256.
    private func write(
        _ body: HTTPBody, to handle: FileHandle, limit: Int64, what: String, upload id: UUID,
        progress: UploadPace.Progress
    ) async throws -> (Int64, String) {
        var hasher = SHA256()
        var size: Int64 = 0
        var checkedAt: Int64 = 0
        for try await chunk in body {
            size += Int64(chunk.count)
            progress.add(chunk.count)
            guard size <= limit else { throw APIFailure.tooLarge(what, limit: Int(limit)) }
            hasher.update(data: chunk)
            if size - checkedAt >= Self.recheckBytes {
                try reservations.wrote(id, bytes: size - checkedAt, space: space)
                checkedAt = size
            }
            do {
                try handle.write(contentsOf: chunk)
            } catch {
                throw APIFailure(
                    .storageUnavailable,
                    "The server could not store that (\(error.localizedDescription)); retry later.",
                    retryAfter: 60)
            }
        }
        return (size, hasher.finalize().hexString)
    }

    /// The stored bytes of a blob as a streamed response body.
    func body(of blob: BlobRecord) throws -> HTTPBody {
        guard let id = blob.id, let handle = try? FileHandle(forReadingFrom: url(of: id)) else {
            throw APIFailure(.storageUnavailable, "The blob's bytes are missing on the server.")
        }
        return .streaming(handle, length: blob.size)
    }

    /// Removes a blob's bytes (best effort: an orphaned file wastes space, nothing more).
    func remove(_ id: UUID) {
        try? FileManager.default.removeItem(at: url(of: id))
    }
}
