import Fluent
import SQLKit

/// Version 1 of the relay's schema, the same on SQLite and PostgreSQL.
struct CreateSchema: AsyncMigration {
    var name: String { "confidant.v1" }

    func prepare(on database: any Database) async throws {
        typealias User = UserRecord.Column
        typealias Session = SessionRecord.Column
        typealias Device = DeviceRecord.Column
        typealias Posted = PostedMessageRecord.Column
        typealias Conversation = ConversationRecord.Column
        typealias Blob = BlobRecord.Column
        typealias Grant = BlobGrantRecord.Column
        typealias Throttles = ThrottleRecord.Column
        typealias Mailbox = MailboxRecord.Column
        try await database.schema(UserRecord.schema)
            .id()
            .field(.string(User.email), .string, .required)
            .field(.string(User.displayName), .string, .required)
            .field(.string(User.displayNameKey), .string, .required)
            .field(.string(User.passwordHash), .string, .required)
            .field(.string(User.avatar), .data)
            .field(.string(User.avatarType), .string)
            .field(.string(User.createdAt), .datetime, .required)
            .unique(on: .string(User.email))
            .create()
        try await database.schema(SessionRecord.schema)
            .id()
            .field(.string(Session.userID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field(.string(Session.deviceID), .uuid, .required)
            .field(.string(Session.tokenHash), .data, .required)
            .field(.string(Session.createdAt), .datetime, .required)
            .field(.string(Session.expiresAt), .datetime, .required)
            .field(.string(Session.revokedAt), .datetime)
            .unique(on: .string(Session.tokenHash))
            .create()
        try await database.schema(DeviceRecord.schema)
            .id()
            .field(.string(Device.userID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field(.string(Device.deviceID), .uuid, .required)
            .field(.string(Device.identity), .data, .required)
            .field(.string(Device.registeredAt), .datetime, .required)
            .field(.string(Device.retiredAt), .datetime)
            .create()
        if let sql = database as? any SQLDatabase, sql.dialect.name == "sqlite" {
            // Cursors must never be reused: a device that acknowledged everything resumes "after"
            // its last cursor. Fluent declares SQLite's key as plain INTEGER PRIMARY KEY, which
            // hands out max(rowid) + 1 again once the newest rows are deleted; AUTOINCREMENT does not.
            try await sql.raw(
                """
                CREATE TABLE \(ident: MailboxRecord.schema) (\(ident: Mailbox.cursor) INTEGER PRIMARY KEY AUTOINCREMENT,
                  \(ident: Mailbox.recipientUserID) UUID NOT NULL REFERENCES \(ident: UserRecord.schema) ("id") ON DELETE CASCADE,
                  \(ident: Mailbox.recipientDeviceID) UUID NOT NULL, \(ident: Mailbox.kind) TEXT NOT NULL,
                  \(ident: Mailbox.senderUserID) UUID NOT NULL, \(ident: Mailbox.senderDeviceID) UUID NOT NULL,
                  \(ident: Mailbox.messageID) UUID, \(ident: Mailbox.payload) BLOB NOT NULL, \(ident: Mailbox.receivedAt) REAL NOT NULL)
                """
            ).run()
        } else {
            // PostgreSQL: an identity column, never reused.
            try await database.schema(MailboxRecord.schema)
                .field(.string(Mailbox.cursor), .int64, .identifier(auto: true))
                .field(
                    .string(Mailbox.recipientUserID), .uuid, .required,
                    .references(UserRecord.schema, .id, onDelete: .cascade)
                )
                .field(.string(Mailbox.recipientDeviceID), .uuid, .required)
                .field(.string(Mailbox.kind), .string, .required)
                .field(.string(Mailbox.senderUserID), .uuid, .required)
                .field(.string(Mailbox.senderDeviceID), .uuid, .required)
                .field(.string(Mailbox.messageID), .uuid)
                .field(.string(Mailbox.payload), .data, .required)
                .field(.string(Mailbox.receivedAt), .datetime, .required)
                .create()
        }
        try await database.schema(PostedMessageRecord.schema)
            .id()
            .field(
                .string(Posted.senderUserID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade)
            )
            .field(.string(Posted.messageID), .uuid, .required)
            .field(.string(Posted.stored), .int, .required)
            .field(.string(Posted.receivedAt), .datetime, .required)
            .unique(on: .string(Posted.senderUserID), .string(Posted.messageID))
            .create()
        try await database.schema(ConversationRecord.schema)
            .id()
            .field(
                .string(Conversation.ownerID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade)
            )
            .field(
                .string(Conversation.peerID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade)
            )
            .field(.string(Conversation.lastActivity), .datetime, .required)
            .unique(on: .string(Conversation.ownerID), .string(Conversation.peerID))
            .create()
        try await database.schema(BlobRecord.schema)
            .id()
            .field(.string(Blob.ownerID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade))
            .field(.string(Blob.size), .int64, .required)
            .field(.string(Blob.sha256), .string, .required)
            .field(.string(Blob.createdAt), .datetime, .required)
            .create()
        try await database.schema(BlobGrantRecord.schema)
            .id()
            .field(.string(Grant.blobID), .uuid, .required, .references(BlobRecord.schema, .id, onDelete: .cascade))
            .field(
                .string(Grant.recipientID), .uuid, .required, .references(UserRecord.schema, .id, onDelete: .cascade)
            )
            .field(.string(Grant.capabilityHash), .data, .required)
            .field(.string(Grant.createdAt), .datetime, .required)
            .unique(on: .string(Grant.capabilityHash))
            .create()
        try await database.schema(ThrottleRecord.schema)
            .field(.string(Throttles.key), .string, .identifier(auto: false))
            .field(.string(Throttles.failures), .int, .required)
            .field(.string(Throttles.lastFailureAt), .datetime, .required)
            .create()
        if let sql = database as? any SQLDatabase {
            try await sql.create(index: "mailbox_by_device").on(MailboxRecord.schema)
                .column(Mailbox.recipientUserID).column(Mailbox.recipientDeviceID).column(Mailbox.cursor).run()
            try await sql.create(index: "mailbox_by_message").on(MailboxRecord.schema).column(Mailbox.messageID).run()
            try await sql.create(index: "devices_by_user").on(DeviceRecord.schema).column(Device.userID).column(
                Device.deviceID
            ).run()
            try await sql.create(index: "sessions_by_device").on(SessionRecord.schema).column(Session.userID).column(
                Session.deviceID
            ).run()
            try await sql.create(index: "conversations_by_peer").on(ConversationRecord.schema).column(
                Conversation.peerID
            ).run()
        }
    }

    func revert(on database: any Database) async throws {
        for schema in [
            ThrottleRecord.schema, BlobGrantRecord.schema, BlobRecord.schema, ConversationRecord.schema,
            PostedMessageRecord.schema, MailboxRecord.schema, DeviceRecord.schema, SessionRecord.schema,
            UserRecord.schema,
        ] {
            try await database.schema(schema).delete()
        }
    }
}
