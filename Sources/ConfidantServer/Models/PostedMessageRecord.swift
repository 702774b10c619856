import Fluent
import Foundation

/// Remembers each accepted message id per sender, so that a retried send is answered from here
/// and stores nothing twice.
final class PostedMessageRecord: Model, @unchecked Sendable {
    static let schema = "posted_messages"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let senderUserID = "sender_user_id"
        static let messageID = "message_id"
        static let stored = "stored"
        static let receivedAt = "received_at"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.senderUserID)) var senderUserID: UUID
    @Field(key: .string(Column.messageID)) var messageID: UUID
    @Field(key: .string(Column.stored)) var stored: Int
    @Field(key: .string(Column.receivedAt)) var receivedAt: Date

    init() {}
}
