import Fluent
import SQLKit

/// Version 10, PostgreSQL only: the mailbox's counts per device (`MailboxCountTable`), kept by
/// statement-level triggers on every `INSERT`, `DELETE` and `TRUNCATE` of the mailbox, and filled
/// from the entries already there. The table is locked against writes meanwhile, so that no entry
/// is counted both by the fill and by a trigger. SQLite's relay keeps its counts on its write
/// connection (`PendingEntryCounts`) and gets nothing here.
struct CountMailboxEntries: AsyncMigration {
    var name: String { "confidant.v10.mailbox-counts" }

    private typealias Entry = MailboxRecord.Column
    private static let table = MailboxCountTable.schema

    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase, sql.dialect.name != "sqlite" else { return }
        let user = Entry.recipientUserID
        let device = Entry.recipientDeviceID
        let entries = MailboxCountTable.entries
        try await database.transaction { database in
            guard let sql = database as? any SQLDatabase else { return }
            try await sql.raw("LOCK TABLE \(ident: MailboxRecord.schema) IN SHARE ROW EXCLUSIVE MODE").run()
            try await sql.raw(
                """
                CREATE TABLE \(ident: Self.table) (\(ident: user) UUID NOT NULL, \(ident: device) UUID NOT NULL, \
                \(ident: entries) BIGINT NOT NULL)
                """
            ).run()
            try await sql.raw(
                "CREATE INDEX mailbox_counts_by_device ON \(ident: Self.table) (\(ident: user), \(ident: device))"
            )
            .run()
            for (function, rows, sign) in [
                ("mailbox_counts_added", "added", ""), ("mailbox_counts_removed", "removed", "-"),
            ] {
                try await sql.raw(
                    """
                    CREATE FUNCTION \(unsafeRaw: function)() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                    INSERT INTO \(ident: Self.table) (\(ident: user), \(ident: device), \(ident: entries)) \
                    SELECT \(ident: user), \(ident: device), \(unsafeRaw: sign)COUNT(*) FROM \(unsafeRaw: rows) \
                    GROUP BY \(ident: user), \(ident: device); RETURN NULL; END $$
                    """
                ).run()
            }
            try await sql.raw(
                """
                CREATE FUNCTION mailbox_counts_truncated() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                DELETE FROM \(ident: Self.table); RETURN NULL; END $$
                """
            ).run()
            try await sql.raw(
                """
                CREATE TRIGGER mailbox_counts_on_insert AFTER INSERT ON \(ident: MailboxRecord.schema) \
                REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION mailbox_counts_added()
                """
            ).run()
            try await sql.raw(
                """
                CREATE TRIGGER mailbox_counts_on_delete AFTER DELETE ON \(ident: MailboxRecord.schema) \
                REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION mailbox_counts_removed()
                """
            ).run()
            try await sql.raw(
                """
                CREATE TRIGGER mailbox_counts_on_truncate AFTER TRUNCATE ON \(ident: MailboxRecord.schema) \
                FOR EACH STATEMENT EXECUTE FUNCTION mailbox_counts_truncated()
                """
            ).run()
            try await sql.raw(
                """
                INSERT INTO \(ident: Self.table) (\(ident: user), \(ident: device), \(ident: entries)) \
                SELECT \(ident: user), \(ident: device), COUNT(*) FROM \(ident: MailboxRecord.schema) \
                GROUP BY \(ident: user), \(ident: device)
                """
            ).run()
        }
    }

    func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase, sql.dialect.name != "sqlite" else { return }
        for trigger in ["mailbox_counts_on_insert", "mailbox_counts_on_delete", "mailbox_counts_on_truncate"] {
            try await sql.raw("DROP TRIGGER IF EXISTS \(unsafeRaw: trigger) ON \(ident: MailboxRecord.schema)").run()
        }
        for function in ["mailbox_counts_added", "mailbox_counts_removed", "mailbox_counts_truncated"] {
            try await sql.raw("DROP FUNCTION IF EXISTS \(unsafeRaw: function)()").run()
        }
        try await sql.raw("DROP TABLE IF EXISTS \(ident: Self.table)").run()
    }
}
