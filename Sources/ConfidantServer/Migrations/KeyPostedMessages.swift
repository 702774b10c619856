import Fluent
import SQLKit

/// Version 9: a sent message's record is keyed by what identifies it, (sender, message id),
/// without a surrogate `id`. On SQLite the table becomes `WITHOUT ROWID` with that key, so
/// storing a record writes two B-trees (the table and its index on time) instead of four (the
/// rows, the `id` key, the unique pair, the time), in every send group. PostgreSQL drops the column; the unique pair stays its key.
struct KeyPostedMessages: AsyncMigration {
    var name: String { "confidant.v9.posted-message-keys" }

    private typealias Posted = PostedMessageRecord.Column
    private static let table = PostedMessageRecord.schema

    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        guard sql.dialect.name == "sqlite" else {
            try await sql.raw("ALTER TABLE \(ident: Self.table) DROP COLUMN \(ident: "id")").run()
            return
        }
        try await sql.raw(
            """
            CREATE TABLE posted_messages_keyed (
              \(ident: Posted.senderUserID) UUID NOT NULL REFERENCES \(ident: UserRecord.schema) ("id") ON DELETE CASCADE,
              \(ident: Posted.messageID) UUID NOT NULL, \(ident: Posted.stored) INTEGER NOT NULL,
              \(ident: Posted.receivedAt) REAL NOT NULL,
              PRIMARY KEY (\(ident: Posted.senderUserID), \(ident: Posted.messageID))) WITHOUT ROWID
            """
        ).run()
        try await sql.raw(
            """
            INSERT INTO posted_messages_keyed SELECT \(ident: Posted.senderUserID), \(ident: Posted.messageID),
              \(ident: Posted.stored), \(ident: Posted.receivedAt) FROM \(ident: Self.table)
            """
        ).run()
        try await sql.raw("DROP TABLE \(ident: Self.table)").run()
        try await sql.raw("ALTER TABLE posted_messages_keyed RENAME TO \(ident: Self.table)").run()
        try await sql.create(index: "posted_messages_by_time").on(Self.table).column(Posted.receivedAt).run()
    }

    /// Back to version 8's shape; each record gets a new random `id`.
    func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        guard sql.dialect.name == "sqlite" else {
            try await sql.raw(
                "ALTER TABLE \(ident: Self.table) ADD COLUMN \(ident: "id") UUID NOT NULL DEFAULT gen_random_uuid()"
            ).run()
            try await sql.raw("ALTER TABLE \(ident: Self.table) ALTER COLUMN \(ident: "id") DROP DEFAULT").run()
            try await sql.raw("ALTER TABLE \(ident: Self.table) ADD PRIMARY KEY (\(ident: "id"))").run()
            return
        }
        try await sql.raw(
            """
            CREATE TABLE posted_messages_with_ids ("id" UUID PRIMARY KEY,
              \(ident: Posted.senderUserID) UUID NOT NULL REFERENCES \(ident: UserRecord.schema) ("id") ON DELETE CASCADE,
              \(ident: Posted.messageID) UUID NOT NULL, \(ident: Posted.stored) INTEGER NOT NULL,
              \(ident: Posted.receivedAt) REAL NOT NULL,
              UNIQUE (\(ident: Posted.senderUserID), \(ident: Posted.messageID)))
            """
        ).run()
        // A random UUID in Fluent's text form (uppercase, hyphenated) for each row.
        try await sql.raw(
            """
            INSERT INTO posted_messages_with_ids SELECT
              substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || substr(h, 17, 4) || '-' || substr(h, 21, 12),
              \(ident: Posted.senderUserID), \(ident: Posted.messageID), \(ident: Posted.stored), \(ident: Posted.receivedAt)
            FROM (SELECT hex(randomblob(16)) AS h, * FROM \(ident: Self.table))
            """
        ).run()
        try await sql.raw("DROP TABLE \(ident: Self.table)").run()
        try await sql.raw("ALTER TABLE posted_messages_with_ids RENAME TO \(ident: Self.table)").run()
        try await sql.create(index: "posted_messages_by_time").on(Self.table).column(Posted.receivedAt).run()
    }
}
