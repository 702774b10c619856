import ConfidantAPI
import Foundation
import SQLKit

/// A blob's rows in `blob_chunks`, read in order as a download asks for them, one chunk ahead so
/// that the database and the network work at once. Ends with an error if a chunk is missing or
/// the chunks do not add up to the blob's size (the response then ends short: its length was
/// declared, so a client never takes a truncated blob for a whole one).
struct ChunkReads: Sendable {
    let database: RelayDatabase
    let blob: UUID
    let size: Int64

    /// Chunk `sequence`'s bytes, or nil when there is no such row.
    func chunk(_ sequence: Int32) async throws -> Data? {
        typealias Column = BlobChunkTable.Column
        return try await database.sql.select().column(SQLIdentifier(Column.bytes)).from(BlobChunkTable.name)
            .where(SQLIdentifier(Column.blobID), .equal, SQLBind(blob))
            .where(SQLIdentifier(Column.sequence), .equal, SQLBind(sequence))
            .first()?.decode(column: Column.bytes, as: Data.self)
    }

    /// The bytes from the start, with chunk 0 already read.
    func starting(with first: Data?) -> Bytes { Bytes(reads: self, first: first) }

    static let missing = APIFailure(.storageUnavailable, "Part of the blob's bytes is missing on the server.")

    struct Bytes: AsyncSequence, Sendable {
        typealias Element = ArraySlice<UInt8>
        let reads: ChunkReads
        let first: Data?

        func makeAsyncIterator() -> Iterator { Iterator(reads: reads, first: first) }
    }

    struct Iterator: AsyncIteratorProtocol {
        let reads: ChunkReads
        var first: Data?
        var delivered: Int64 = 0
        var sequence: Int32 = 0
        var ahead: Task<Data?, any Error>?

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard delivered < reads.size else {
                guard delivered == reads.size else { throw ChunkReads.missing }
                return nil
            }
            let bytes: Data?
            if sequence == 0 {
                bytes = first
                first = nil
            } else {
                bytes = try await ahead?.value
            }
            guard let bytes, !bytes.isEmpty else { throw ChunkReads.missing }
            delivered += Int64(bytes.count)
            sequence &+= 1
            if delivered < reads.size {
                let reads = reads
                let next = sequence
                ahead = Task { try await reads.chunk(next) }
            } else {
                ahead = nil
            }
            return ArraySlice(bytes)
        }
    }
}
