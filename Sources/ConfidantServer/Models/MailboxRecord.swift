import Fluent
import Foundation

/// One entry waiting for one device: an envelope or a key-change notice. The database assigns
/// `cursor`, increasing; an entry is deleted when its device acknowledges it.
final class MailboxRecord: Model, @unchecked Sendable {
    static let schema = "mailbox"

    enum Kind: String, Codable { case envelope, keyChange = "key_change", prekeysLow = "prekeys_low" }

    @ID(custom: "cursor", generatedBy: .database) var id: Int64?
    @Field(key: "recipient_user_id") var recipientUserID: UUID
    @Field(key: "recipient_device_id") var recipientDeviceID: UUID
    @Field(key: "kind") var kind: Kind
    @Field(key: "sender_user_id") var senderUserID: UUID
    @Field(key: "sender_device_id") var senderDeviceID: UUID
    @OptionalField(key: "message_id") var messageID: UUID?
    /// The envelope bytes, or the JSON of a `KeyChange` or a `PrekeyStatus`.
    @Field(key: "payload") var payload: Data
    @Field(key: "received_at") var receivedAt: Date

    init() {}
}
