import Fluent
import SQLKit

/// Version 13: group envelopes stored once for all of their recipients (`SharedBodyTable`), and
/// the index that finds a body's remaining entries when one is acknowledged.
struct AddSharedBodies: AsyncMigration {
    var name: String { "confidant.v13.shared_bodies" }

    private typealias Body = SharedBodyTable.Column
    private typealias Mailbox = MailboxRecord.Column

    func prepare(on database: any Database) async throws {
        let sql = try RelayDatabase.sql(database)
        let sqlite = sql.dialect.name == "sqlite"
        try await sql.raw(
            """
            CREATE TABLE \(ident: SharedBodyTable.schema) (\(ident: Body.senderUserID) UUID NOT NULL,
              \(ident: Body.messageID) UUID NOT NULL, \(ident: Body.payload) \(unsafeRaw: sqlite ? "BLOB" : "BYTEA") NOT NULL,
              PRIMARY KEY (\(ident: Body.senderUserID), \(ident: Body.messageID)))
            """
        ).run()
        try await sql.raw(
            """
            CREATE INDEX "mailbox_shared_bodies" ON \(ident: MailboxRecord.schema)
              (\(ident: Mailbox.senderUserID), \(ident: Mailbox.messageID))
              WHERE \(ident: Mailbox.kind) = '\(unsafeRaw: MailboxRecord.Kind.sharedEnvelope.rawValue)'
            """
        ).run()
    }

    func revert(on database: any Database) async throws {
        let sql = try RelayDatabase.sql(database)
        try await sql.raw("DROP INDEX \"mailbox_shared_bodies\"").run()
        try await sql.raw("DROP TABLE \(ident: SharedBodyTable.schema)").run()
    }
}
