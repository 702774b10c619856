import GRDB

/// The local store's schema, one named migration per version.
enum LocalStoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
                    CREATE TABLE contact (
                        user_id TEXT PRIMARY KEY,
                        email_lookup BLOB NOT NULL UNIQUE,
                        sealed BLOB NOT NULL,
                        verified_digest BLOB);
                    CREATE TABLE contact_key (
                        user_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        fingerprint TEXT NOT NULL,
                        identity BLOB NOT NULL,
                        first_seen REAL NOT NULL,
                        retired_at REAL,
                        PRIMARY KEY (user_id, device_id, fingerprint));
                    CREATE TABLE message (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        message_id TEXT NOT NULL,
                        peer_id TEXT NOT NULL,
                        direction INTEGER NOT NULL,
                        sender_device TEXT,
                        sent_at REAL NOT NULL,
                        body BLOB,
                        unreadable_reason TEXT,
                        state TEXT NOT NULL,
                        failure TEXT,
                        is_read INTEGER NOT NULL DEFAULT 0,
                        UNIQUE (message_id, peer_id, direction));
                    CREATE INDEX message_by_peer ON message (peer_id, seq);
                    CREATE TABLE outbox (
                        message_id TEXT PRIMARY KEY,
                        peer_id TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        confirmed INTEGER NOT NULL DEFAULT 0,
                        created_at REAL NOT NULL);
                    """)
        }
        // Sessions (envelope v2) per peer device, bound to the identity they were started with;
        // which envelope version carried each received message.
        migrator.registerMigration("v2-sessions") { db in
            try db.execute(
                sql: """
                    ALTER TABLE message ADD COLUMN envelope INTEGER;
                    CREATE TABLE session (
                        user_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        fingerprint TEXT NOT NULL,
                        sealed BLOB NOT NULL,
                        updated_at REAL NOT NULL,
                        PRIMARY KEY (user_id, device_id));
                    """)
        }
        // Automatic retries: when the next attempt of a waiting message is due, and why the last
        // one failed.
        migrator.registerMigration("v3-retries") { db in
            try db.alter(table: "outbox") { table in
                table.add(column: "next_attempt_at", .double)
                table.add(column: "last_error", .text)
            }
        }
        // Messages people send: attachments, edits, deletions, disappearing timers, receipts
        // (`state` takes `delivered` and `read`), and the queue of sealed control messages.
        migrator.registerMigration("v4-rich-messages") { db in
            try db.execute(
                sql: """
                    ALTER TABLE message ADD COLUMN edited_at REAL;
                    ALTER TABLE message ADD COLUMN deleted_at REAL;
                    ALTER TABLE message ADD COLUMN expires_at REAL;
                    CREATE INDEX message_expiry ON message (expires_at) WHERE expires_at IS NOT NULL;
                    CREATE TABLE attachment (
                        attachment_id TEXT NOT NULL,
                        message_id TEXT NOT NULL,
                        peer_id TEXT NOT NULL,
                        direction INTEGER NOT NULL,
                        position INTEGER NOT NULL,
                        sealed BLOB NOT NULL,
                        PRIMARY KEY (message_id, peer_id, direction, position),
                        FOREIGN KEY (message_id, peer_id, direction)
                            REFERENCES message (message_id, peer_id, direction) ON DELETE CASCADE);
                    CREATE INDEX attachment_by_id ON attachment (attachment_id);
                    CREATE TABLE conversation_setting (
                        peer_id TEXT PRIMARY KEY,
                        expires_after INTEGER);
                    CREATE TABLE control_outbox (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        message_id TEXT NOT NULL UNIQUE,
                        peer_id TEXT NOT NULL,
                        sealed BLOB NOT NULL,
                        to_own_devices INTEGER NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_at REAL,
                        last_error TEXT,
                        created_at REAL NOT NULL);
                    """)
        }
        // The run of the system each session row was written in: a row of an earlier run may
        // have lost writes that were not synced, and its sending chains go on past their
        // reservations (docs/PROTOCOL.md §9.6). NULL (rows from before) counts as an earlier run.
        migrator.registerMigration("v5-session-boot") { db in
            try db.alter(table: "session") { table in table.add(column: "boot", .text) }
        }
        // The outbox keyed by its message id alone (WITHOUT ROWID): a rowid table and the index
        // of its key would be two pages in the log for every message queued and two more when it
        // is sent. SQLite reports no rows of such a
        // table to its update hook: `deferDelivery`, the one write of the outbox alone, tells the
        // store's observers itself (`Database.notifyChanges`).
        migrator.registerMigration("v6-outbox-by-message") { db in
            try db.execute(
                sql: """
                    CREATE TABLE outbox_by_message (
                        message_id TEXT PRIMARY KEY NOT NULL,
                        peer_id TEXT NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        confirmed INTEGER NOT NULL DEFAULT 0,
                        created_at REAL NOT NULL,
                        next_attempt_at REAL,
                        last_error TEXT) WITHOUT ROWID;
                    INSERT INTO outbox_by_message
                        (message_id, peer_id, attempts, confirmed, created_at, next_attempt_at, last_error)
                        SELECT message_id, peer_id, attempts, confirmed, created_at, next_attempt_at, last_error
                        FROM outbox WHERE message_id IS NOT NULL;
                    DROP TABLE outbox;
                    ALTER TABLE outbox_by_message RENAME TO outbox;
                    """)
        }
        // What a relay could hand this device again and have applied twice (docs/PROTOCOL.md §8,
        // "Replays"): the ids of control messages applied, and of received messages that are gone
        // (expired), each with when it was seen, kept for `LocalStore.replayWindow`; and when the
        // conversation's timer in force was set, so an older timer control does not replace it.
        migrator.registerMigration("v7-replays") { db in
            try db.execute(
                sql: """
                    CREATE TABLE seen_envelope (
                        sender_id TEXT NOT NULL,
                        message_id TEXT NOT NULL,
                        seen_at REAL NOT NULL,
                        PRIMARY KEY (sender_id, message_id)) WITHOUT ROWID;
                    CREATE INDEX seen_envelope_by_time ON seen_envelope (seen_at);
                    ALTER TABLE conversation_setting ADD COLUMN set_at REAL;
                    """)
        }
        // What a notice is about, so that a timer notice is not taken for a key-change warning.
        migrator.registerMigration("v8-notice-kinds") { db in
            try db.execute(sql: "ALTER TABLE message ADD COLUMN notice_kind TEXT")
        }
        // Groups (docs/PROTOCOL.md §10): each signed change this device holds, sealed; `verified`
        // once its author's key checked it (until then it waits for the key).
        migrator.registerMigration("v9-groups") { db in
            try db.execute(
                sql: """
                    CREATE TABLE group_change (
                        group_id TEXT NOT NULL,
                        digest BLOB NOT NULL,
                        sealed BLOB NOT NULL,
                        verified INTEGER NOT NULL,
                        received_at REAL NOT NULL,
                        PRIMARY KEY (group_id, digest)) WITHOUT ROWID;
                    """)
        }
        // Messages to a group: the author of each (the conversation is the group), and which
        // group message a queued control carries, so the message is sent once all of them went.
        migrator.registerMigration("v10-group-messages") { db in
            try db.execute(
                sql: """
                    ALTER TABLE message ADD COLUMN author_id TEXT;
                    ALTER TABLE control_outbox ADD COLUMN carries_message TEXT;
                    """)
        }
        // Sender keys (docs/PROTOCOL.md §10.4): this device's sending chain per group and the
        // devices it was given to, and the other member devices' chains it was given.
        migrator.registerMigration("v11-sender-keys") { db in
            try db.execute(
                sql: """
                    CREATE TABLE sender_chain (group_id TEXT PRIMARY KEY, chain_id TEXT NOT NULL, sealed BLOB NOT NULL);
                    CREATE TABLE sender_chain_share (
                      group_id TEXT NOT NULL, chain_id TEXT NOT NULL, user_id TEXT NOT NULL, device_id TEXT NOT NULL,
                      PRIMARY KEY (group_id, user_id, device_id));
                    CREATE TABLE receiving_chain (
                      chain_id TEXT PRIMARY KEY, group_id TEXT NOT NULL, user_id TEXT NOT NULL, device_id TEXT NOT NULL,
                      sealed BLOB NOT NULL, received_at REAL NOT NULL);
                    CREATE INDEX receiving_chain_owner ON receiving_chain (group_id, user_id, device_id, received_at);
                    """)
        }
        // Which members have this account's group messages, and which have read them.
        migrator.registerMigration("v12-group-receipts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE group_receipt (
                      message_id TEXT NOT NULL, group_id TEXT NOT NULL, member_id TEXT NOT NULL, is_read INTEGER NOT NULL,
                      PRIMARY KEY (group_id, message_id, member_id));
                    """)
        }
        // Every control goes to the account's other devices too (the relay asks for them).
        migrator.registerMigration("v13-controls-to-own-devices") { db in
            try db.alter(table: "control_outbox") { $0.drop(column: "to_own_devices") }
        }
        // Reactions: everyone's latest on each message, sealed in the message's row (so a change
        // reaches an open chat as any change of the row does).
        migrator.registerMigration("v14-reactions") { db in
            try db.execute(sql: "ALTER TABLE message ADD COLUMN reactions BLOB")
        }
        // Replies: the message each answers (in clear, as message ids are, so that its deletion
        // finds its replies) and the quote it carries, sealed.
        migrator.registerMigration("v15-replies") { db in
            try db.execute(
                sql: """
                    ALTER TABLE message ADD COLUMN reply_to TEXT;
                    ALTER TABLE message ADD COLUMN reply_excerpt BLOB;
                    CREATE INDEX message_replies ON message (peer_id, reply_to) WHERE reply_to IS NOT NULL;
                    """)
        }
        // What a conversation keeps besides its lines: the composer's draft (sealed) and the
        // user's "mark as unread", until the conversation is read again.
        migrator.registerMigration("v16-conversation-state") { db in
            try db.execute(
                sql: """
                    CREATE TABLE conversation_state (
                        conversation_id TEXT PRIMARY KEY NOT NULL,
                        draft BLOB,
                        marked_unread INTEGER NOT NULL DEFAULT 0
                    );
                    """)
        }
        // The search index: keyed hashes of word prefixes per message (LocalStore+Search), its
        // rows dropped with the message or its text; messages stored before it are indexed
        // later, newest first (`search_backfill` holds where that stands).
        migrator.registerMigration("v17-search") { db in
            try db.execute(
                sql: """
                    CREATE TABLE search_token (
                        token INTEGER NOT NULL,
                        seq INTEGER NOT NULL,
                        PRIMARY KEY (token, seq)
                    ) WITHOUT ROWID;
                    CREATE INDEX search_token_by_message ON search_token (seq);
                    CREATE TRIGGER search_forget_deleted AFTER DELETE ON message
                    BEGIN DELETE FROM search_token WHERE seq = old.seq; END;
                    CREATE TRIGGER search_forget_cleared AFTER UPDATE OF body ON message WHEN new.body IS NULL
                    BEGIN DELETE FROM search_token WHERE seq = old.seq; END;
                    CREATE TABLE search_backfill (below INTEGER NOT NULL);
                    INSERT INTO search_backfill SELECT MAX(seq) + 1 FROM message HAVING COUNT(*) > 0;
                    """)
        }
        return migrator
    }
}
