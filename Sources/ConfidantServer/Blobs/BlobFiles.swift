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

    func url(of id: UUID) -> URL { directory.appendingPathComponent(id.canonicalString) }

    /// Writes a request body to a new blob file, refusing it past `limit` bytes.
    func store(_ body: HTTPBody, limit: Int64, what: String) async throws -> Stored {
        if case .known(let length) = body.length, length > limit { throw APIFailure.tooLarge(what, limit: Int(limit)) }
        let id = UUID()
        let final = url(of: id)
        let partial = directory.appendingPathComponent(".\(id.canonicalString).partial")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil),
            let handle = try? FileHandle(forWritingTo: partial)
        else {
            throw APIFailure(.storageUnavailable, "The server cannot write blobs now; try again later.")
        }
        var hasher = SHA256()
        var size: Int64 = 0
        do {
            defer { try? handle.close() }
            for try await chunk in body {
                size += Int64(chunk.count)
                guard size <= limit else { throw APIFailure.tooLarge(what, limit: Int(limit)) }
                hasher.update(data: chunk)
                try handle.write(contentsOf: chunk)
            }
            try handle.synchronize()
            try FileManager.default.moveItem(at: partial, to: final)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
        return Stored(id: id, file: final, size: size, sha256: hasher.finalize().hexString)
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
