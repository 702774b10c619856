import Fluent
import SQLKit

/// Version 8: indexes for how messages are written and purged. The mailbox's index on message
/// ids goes: no query reads through it, and with random message ids (older clients) every stored
/// message wrote one more random index page. Sent-message records (for idempotent retries) get an
/// index on their time, so that maintenance deletes those past the mailbox retention without
/// reading the whole table.
struct ReindexMessages: AsyncMigration {
    var name: String { "confidant.v8.message-indexes" }

    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.raw("DROP INDEX IF EXISTS mailbox_by_message").run()
        try await sql.create(index: "posted_messages_by_time").on(PostedMessageRecord.schema)
            .column(PostedMessageRecord.Column.receivedAt).run()
    }

    func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.raw("DROP INDEX IF EXISTS posted_messages_by_time").run()
        try await sql.create(index: "mailbox_by_message").on(MailboxRecord.schema)
            .column(MailboxRecord.Column.messageID).run()
    }
}
