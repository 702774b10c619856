import Fluent
import Foundation

/// "Owner has talked with peer; last activity at …" — one row per direction, for the recent
/// conversations screen and for routing key-change notices.
final class ConversationRecord: Model, @unchecked Sendable {
    static let schema = "conversations"

    @ID(key: .id) var id: UUID?
    @Field(key: "owner_id") var ownerID: UUID
    @Field(key: "peer_id") var peerID: UUID
    @Field(key: "last_activity") var lastActivity: Date

    init() {}
}
