/// Remembers each accepted message id per sender, so that a retried send is answered from here
/// and stores nothing twice. Keyed by (sender, message id) since version 9
/// (`KeyPostedMessages`); read and written in SQL (`PostedMessageTable`, `MailboxWriteStatements`).
enum PostedMessageRecord {
    static let schema = "posted_messages"

    /// Column names, for the migrations and SQL alike.
    enum Column {
        static let senderUserID = "sender_user_id"
        static let messageID = "message_id"
        static let stored = "stored"
        static let receivedAt = "received_at"
    }
}
