import Foundation
import OpenAPIRuntime

/// Where the bytes of attachments and backup objects live: files in the data directory
/// (`BlobFiles`, with SQLite) or chunked rows in the database (`BlobChunks`, with PostgreSQL, so
/// that instances share nothing but the database). The `blobs` table says what exists and who
/// may read it; a store holds only bytes, and both stream them in constant memory.
protocol BlobStore: Sendable {
    /// Receives a request body as a new blob of `owner`, refusing it past `limit` bytes (see
    /// `BlobIntake` for the other limits); nothing of a refused or failed upload is kept.
    func store(_ body: HTTPBody, limit: Int64, what: String, owner: UUID) async throws -> StoredBlob

    /// The stored bytes of `blob` as a streamed response body.
    func body(of blob: BlobRecord) async throws -> HTTPBody

    /// Removes the bytes of blobs whose records are gone (best effort: what a failure leaves is
    /// wasted space, which `sweep` or an operator reclaims, never a readable blob).
    func remove(_ ids: [UUID]) async

    /// Removes bytes that no record refers to, left by a process that stopped mid-upload or
    /// between a record's deletion and its bytes'; how many blobs' bytes went.
    func sweep(before date: Date) async throws -> Int
}

/// A blob as stored: its id (also the record's), size and SHA-256 in hex.
struct StoredBlob: Sendable {
    let id: UUID
    let size: Int64
    let sha256: String
}
