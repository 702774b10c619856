import Fluent
import Foundation

/// Remembers each accepted message id per sender, so that a retried send is answered from here
/// and stores nothing twice.
final class PostedMessageRecord: Model, @unchecked Sendable {
    static let schema = "posted_messages"

    @ID(key: .id) var id: UUID?
    @Field(key: "sender_user_id") var senderUserID: UUID
    @Field(key: "message_id") var messageID: UUID
    @Field(key: "stored") var stored: Int
    @Field(key: "received_at") var receivedAt: Date

    init() {}
}
