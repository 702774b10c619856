import Fluent
import SQLKit

/// Version 1 of the relay's schema, the same on SQLite and PostgreSQL.
struct CreateSchema: AsyncMigration {
    var name: String { "confidant.v1" }

    func prepare(on database: any Database) async throws {
        try await database.schema(UserRecord.schema)
            .id()
            .field("email", .string, .required)
            .field("display_name", .string, .required)
            .field("display_name_key", .string, .required)
            .field("password_hash", .string, .required)
            .field("avatar", .data)
            .field("avatar_type", .string)
            .field("created_at", .datetime, .required)
            .unique(on: "email")
            .create()
        try await database.schema(SessionRecord.schema)
            .id()
            .field("user_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("device_id", .uuid, .required)
            .field("token_hash", .data, .required)
            .field("created_at", .datetime, .required)
            .field("expires_at", .datetime, .required)
            .field("revoked_at", .datetime)
            .unique(on: "token_hash")
            .create()
        try await database.schema(DeviceRecord.schema)
            .id()
            .field("user_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("device_id", .uuid, .required)
            .field("identity", .data, .required)
            .field("registered_at", .datetime, .required)
            .field("retired_at", .datetime)
            .create()
        if let sql = database as? any SQLDatabase, sql.dialect.name == "sqlite" {
            // Cursors must never be reused: a device that acknowledged everything resumes "after"
            // its last cursor. Fluent declares SQLite's key as plain INTEGER PRIMARY KEY, which
            // hands out max(rowid) + 1 again once the newest rows are deleted; AUTOINCREMENT does not.
            try await sql.raw("""
                CREATE TABLE "mailbox" ("cursor" INTEGER PRIMARY KEY AUTOINCREMENT,
                  "recipient_user_id" UUID NOT NULL REFERENCES "users" ("id") ON DELETE CASCADE,
                  "recipient_device_id" UUID NOT NULL, "kind" TEXT NOT NULL, "sender_user_id" UUID NOT NULL,
                  "sender_device_id" UUID NOT NULL, "message_id" UUID, "payload" BLOB NOT NULL, "received_at" REAL NOT NULL)
                """).run()
        } else {
            try await createMailbox(on: database)
        }
        try await database.schema(PostedMessageRecord.schema)
            .id()
            .field("sender_user_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("message_id", .uuid, .required)
            .field("stored", .int, .required)
            .field("received_at", .datetime, .required)
            .unique(on: "sender_user_id", "message_id")
            .create()
        try await database.schema(ConversationRecord.schema)
            .id()
            .field("owner_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("peer_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("last_activity", .datetime, .required)
            .unique(on: "owner_id", "peer_id")
            .create()
        try await database.schema(BlobRecord.schema)
            .id()
            .field("owner_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("size", .int64, .required)
            .field("sha256", .string, .required)
            .field("created_at", .datetime, .required)
            .create()
        try await database.schema(BlobGrantRecord.schema)
            .id()
            .field("blob_id", .uuid, .required, .references(BlobRecord.schema, .id, onDelete: .cascade))
            .field("recipient_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("capability_hash", .data, .required)
            .field("created_at", .datetime, .required)
            .unique(on: "capability_hash")
            .create()
        try await database.schema(ThrottleRecord.schema)
            .field("key", .string, .identifier(auto: false))
            .field("failures", .int, .required)
            .field("last_failure_at", .datetime, .required)
            .create()
        if let sql = database as? any SQLDatabase {
            try await sql.create(index: "mailbox_by_device").on(MailboxRecord.schema)
                .column("recipient_user_id").column("recipient_device_id").column("cursor").run()
            try await sql.create(index: "mailbox_by_message").on(MailboxRecord.schema)
                .column("message_id").run()
            try await sql.create(index: "devices_by_user").on(DeviceRecord.schema)
                .column("user_id").column("device_id").run()
            try await sql.create(index: "sessions_by_device").on(SessionRecord.schema)
                .column("user_id").column("device_id").run()
            try await sql.create(index: "conversations_by_peer").on(ConversationRecord.schema)
                .column("peer_id").run()
        }
    }

    /// PostgreSQL: an identity column, never reused.
    private func createMailbox(on database: any Database) async throws {
        try await database.schema(MailboxRecord.schema)
            .field("cursor", .int64, .identifier(auto: true))
            .field("recipient_user_id", .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field("recipient_device_id", .uuid, .required)
            .field("kind", .string, .required)
            .field("sender_user_id", .uuid, .required)
            .field("sender_device_id", .uuid, .required)
            .field("message_id", .uuid)
            .field("payload", .data, .required)
            .field("received_at", .datetime, .required)
            .create()
    }

    func revert(on database: any Database) async throws {
        for schema in [ThrottleRecord.schema, BlobGrantRecord.schema, BlobRecord.schema, ConversationRecord.schema,
                       PostedMessageRecord.schema, MailboxRecord.schema, DeviceRecord.schema, SessionRecord.schema, UserRecord.schema] {
            try await database.schema(schema).delete()
        }
    }
}
