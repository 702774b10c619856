import Fluent
import Foundation

/// "Owner has talked with peer; last activity at …" — one row per direction, for the recent
/// conversations screen and for routing key-change notices.
final class ConversationRecord: Model, @unchecked Sendable {
    static let schema = "conversations"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let ownerID = "owner_id"
        static let peerID = "peer_id"
        static let lastActivity = "last_activity"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.ownerID)) var ownerID: UUID
    @Field(key: .string(Column.peerID)) var peerID: UUID
    @Field(key: .string(Column.lastActivity)) var lastActivity: Date

    init() {}
}
