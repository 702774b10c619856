import Fluent
import SQLKit

/// Version 15: on PostgreSQL, the bytes of blobs in the database (`BlobChunks`), so that
/// instances share nothing else. Stored out of line and uncompressed (`STORAGE EXTERNAL`): the
/// bytes are ciphertext, which no compression shrinks. SQLite keeps blob files.
struct AddBlobChunks: AsyncMigration {
    var name: String { "confidant.v15.blob_chunks" }

    private typealias Column = BlobChunkTable.Column

    func prepare(on database: any Database) async throws {
        let sql = try RelayDatabase.sql(database)
        guard sql.dialect.name != "sqlite" else { return }
        try await sql.raw(
            """
            CREATE TABLE \(ident: BlobChunkTable.name) (\(ident: Column.blobID) UUID NOT NULL,
              \(ident: Column.sequence) INTEGER NOT NULL, \(ident: Column.bytes) BYTEA NOT NULL,
              \(ident: Column.storedAt) TIMESTAMPTZ NOT NULL,
              PRIMARY KEY (\(ident: Column.blobID), \(ident: Column.sequence)))
            """
        ).run()
        try await sql.raw(
            "ALTER TABLE \(ident: BlobChunkTable.name) ALTER COLUMN \(ident: Column.bytes) SET STORAGE EXTERNAL"
        ).run()
    }

    func revert(on database: any Database) async throws {
        let sql = try RelayDatabase.sql(database)
        guard sql.dialect.name != "sqlite" else { return }
        try await sql.raw("DROP TABLE \(ident: BlobChunkTable.name)").run()
    }
}
