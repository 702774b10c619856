import ConfidantAPI
import Foundation
import OpenAPIRuntime
import SQLKit
import Synchronization

/// The bytes of blobs and backup objects as rows of `BlobChunks.chunkBytes` in PostgreSQL
/// (`blob_chunks`), so that every instance of a relay reads what any of them stored and the
/// instances share nothing but the database. Written a chunk at a time as the upload comes and
/// read a chunk at a time (one ahead) as the download goes: two chunks in memory per transfer.
struct BlobChunks: BlobStore {
    let database: RelayDatabase
    let intake: BlobIntake
    /// Blob files of a relay that kept them in its data directory before its bytes moved to the
    /// database: read and removed there, so that nothing stored before an upgrade is lost.
    let earlierFiles: BlobFiles
    let now: @Sendable () -> Date

    /// The bytes of one row: large enough that a 100 MiB transfer takes 100 statements, small
    /// enough that concurrent transfers hold little.
    static let chunkBytes = 1 << 20

    init(database: RelayDatabase, pace: UploadPace, earlierFiles: BlobFiles, now: @escaping @Sendable () -> Date) {
        self.database = database
        self.earlierFiles = earlierFiles
        self.now = now
        // The bytes go to the database's disk, which this process cannot see: no free-space floor.
        intake = BlobIntake(pace: pace, space: DiskSpace(directory: earlierFiles.directory, floor: 0) { _ in nil })
    }

    func store(_ body: HTTPBody, limit: Int64, what: String, owner: UUID) async throws -> StoredBlob {
        let id = UUID()
        let pending = PendingChunk()
        do {
            let (size, sha256) = try await intake.receive(body, limit: limit, what: what, owner: owner, id: id) {
                [self] piece in
                for chunk in pending.append(piece) { try await insert(chunk, of: id) }
            }
            if let last = pending.rest() { try await insert(last, of: id) }
            return StoredBlob(id: id, size: size, sha256: sha256)
        } catch {
            await remove([id])
            throw error
        }
    }

    private func insert(_ chunk: (sequence: Int32, bytes: Data), of id: UUID) async throws {
        let now = now()
        try await database.write(singleStatement: true) { db in
            try await RelayDatabase.sql(db).insert(into: BlobChunkTable.name)
                .columns(Column.blobID, Column.sequence, Column.bytes, Column.storedAt)
                .values(SQLBind(id), SQLBind(chunk.sequence), SQLBind(chunk.bytes), SQLBind(now)).run()
        }
    }

    func body(of blob: BlobRecord) async throws -> HTTPBody {
        guard let id = blob.id else { throw APIFailure.notFound("That blob") }
        let reads = ChunkReads(database: database, blob: id, size: blob.size)
        let first = try await reads.chunk(0)
        if first == nil, blob.size > 0 { return try earlierFiles.body(of: blob) }
        return HTTPBody(reads.starting(with: first), length: .known(blob.size), iterationBehavior: .single)
    }

    func remove(_ ids: [UUID]) async {
        guard !ids.isEmpty else { return }
        _ = try? await database.write(singleStatement: true) { db in
            try await RelayDatabase.sql(db).delete(from: BlobChunkTable.name)
                .where(SQLIdentifier(Column.blobID), .in, SQLBind.group(ids)).run()
        }
        earlierFiles.remove(ids)
    }

    /// Removes the chunks of blobs without a record whose last chunk is older than `date` (an
    /// upload under way adds a chunk at least every minute at the slowest pace it is allowed).
    func sweep(before date: Date) async throws -> Int {
        let orphans = try await database.sql.raw(
            """
            SELECT \(ident: Column.blobID) AS id FROM \(ident: BlobChunkTable.name) c
            WHERE NOT EXISTS (SELECT 1 FROM \(ident: BlobRecord.schema) b WHERE b."id" = c.\(ident: Column.blobID))
            GROUP BY \(ident: Column.blobID) HAVING MAX(\(ident: Column.storedAt)) < \(bind: date)
            """
        ).all().map { try $0.decode(column: "id", as: UUID.self) }
        for batch in stride(from: 0, to: orphans.count, by: 500) {
            await remove(Array(orphans[batch..<min(batch + 500, orphans.count)]))
        }
        return orphans.count
    }

    private typealias Column = BlobChunkTable.Column
}

/// `blob_chunks`: PostgreSQL's rows of blob bytes (`BlobChunks`).
enum BlobChunkTable {
    static let name = "blob_chunks"

    enum Column {
        static let blobID = "blob_id"
        static let sequence = "sequence"
        static let bytes = "bytes"
        static let storedAt = "stored_at"
    }
}

/// The bytes of an upload not yet written, cut into chunks of exactly `BlobChunks.chunkBytes`
/// (the last one shorter), each with its sequence number. The upload's pieces come one after
/// another; the lock only makes the buffer safe to reach from the upload's task.
private final class PendingChunk: Sendable {
    typealias Chunk = (sequence: Int32, bytes: Data)

    private struct State {
        var bytes = Data()
        var sequence: Int32 = 0

        mutating func take(_ count: Int) -> Chunk {
            let chunk = (sequence, Data(bytes.prefix(count)))
            bytes = Data(bytes.dropFirst(count))
            sequence &+= 1
            return chunk
        }
    }
    private let state = Mutex(State())

    /// Adds `piece`; the chunks it filled.
    func append(_ piece: ArraySlice<UInt8>) -> [Chunk] {
        state.withLock { state in
            state.bytes.append(contentsOf: piece)
            var full: [Chunk] = []
            while state.bytes.count >= BlobChunks.chunkBytes { full.append(state.take(BlobChunks.chunkBytes)) }
            return full
        }
    }

    /// What is left at the end of the upload, if anything.
    func rest() -> Chunk? {
        state.withLock { state in state.bytes.isEmpty ? nil : state.take(state.bytes.count) }
    }
}
