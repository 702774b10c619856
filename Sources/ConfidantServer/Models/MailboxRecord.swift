import Fluent
import Foundation

/// One entry waiting for one device: an envelope or a notice. The database assigns `cursor`,
/// increasing; an entry is deleted when its device acknowledges it. The hot paths read and write
/// this table in SQL (`MailboxTable`); the model serves the rest.
final class MailboxRecord: Model, @unchecked Sendable {
    static let schema = "mailbox"

    enum Kind: String, Codable, Sendable {
        case envelope
        /// A group envelope stored once for all of its recipients (`SharedBodyTable`): the row's
        /// payload is empty, and reads take the body by the sender and message id.
        case sharedEnvelope = "shared_envelope"
        case keyChange = "key_change"
        case prekeysLow = "prekeys_low"

        /// An envelope, stored in the row or shared.
        var isEnvelope: Bool { self == .envelope || self == .sharedEnvelope }
    }

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let cursor = "cursor"
        static let recipientUserID = "recipient_user_id"
        static let recipientDeviceID = "recipient_device_id"
        static let kind = "kind"
        static let senderUserID = "sender_user_id"
        static let senderDeviceID = "sender_device_id"
        static let messageID = "message_id"
        static let payload = "payload"
        static let receivedAt = "received_at"
    }

    @ID(custom: .string(Column.cursor), generatedBy: .database) var id: Int64?
    @Field(key: .string(Column.recipientUserID)) var recipientUserID: UUID
    @Field(key: .string(Column.recipientDeviceID)) var recipientDeviceID: UUID
    @Field(key: .string(Column.kind)) var kind: Kind
    @Field(key: .string(Column.senderUserID)) var senderUserID: UUID
    @Field(key: .string(Column.senderDeviceID)) var senderDeviceID: UUID
    @OptionalField(key: .string(Column.messageID)) var messageID: UUID?
    /// The envelope bytes, or the JSON of a `KeyChange` or a `PrekeyStatus`.
    @Field(key: .string(Column.payload)) var payload: Data
    @Field(key: .string(Column.receivedAt)) var receivedAt: Date

    init() {}
}
