import Fluent
import Foundation

/// One device key of a user. Rows are never deleted while the account lives: retired keys stay as
/// key history, so a peer can tell "this key was replaced" from "never existed".
final class DeviceRecord: Model, @unchecked Sendable {
    static let schema = "devices"

    @ID(key: .id) var id: UUID?
    @Field(key: "user_id") var userID: UUID
    @Field(key: "device_id") var deviceID: UUID
    /// The serialized `PublicIdentity` (docs/PROTOCOL.md §2), signature verified on registration.
    @Field(key: "identity") var identity: Data
    @Field(key: "registered_at") var registeredAt: Date
    @OptionalField(key: "retired_at") var retiredAt: Date?
    /// When the device was last told it is running out of one-time prekeys; nil since its last upload.
    @OptionalField(key: "prekeys_low_noticed_at") var prekeysLowNoticedAt: Date?

    init() {}

    init(userID: UUID, deviceID: UUID, identity: Data, registeredAt: Date) {
        self.id = UUID()
        self.userID = userID
        self.deviceID = deviceID
        self.identity = identity
        self.registeredAt = registeredAt
    }
}
