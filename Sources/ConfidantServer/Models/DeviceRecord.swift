import Fluent
import Foundation

/// One device key of a user. Rows are never deleted while the account lives: retired keys stay as
/// key history, so a peer can tell "this key was replaced" from "never existed".
final class DeviceRecord: Model, @unchecked Sendable {
    static let schema = "devices"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let userID = "user_id"
        static let deviceID = "device_id"
        static let identity = "identity"
        static let registeredAt = "registered_at"
        static let retiredAt = "retired_at"
        static let prekeysLowNoticedAt = "prekeys_low_noticed_at"
        static let name = "name"
        static let lastSeenAt = "last_seen_at"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.userID)) var userID: UUID
    @Field(key: .string(Column.deviceID)) var deviceID: UUID
    /// The serialized `PublicIdentity` (docs/PROTOCOL.md §2), signature verified on registration.
    @Field(key: .string(Column.identity)) var identity: Data
    @Field(key: .string(Column.registeredAt)) var registeredAt: Date
    @OptionalField(key: .string(Column.retiredAt)) var retiredAt: Date?
    /// When the device was last told it is running out of one-time prekeys; nil since its last upload.
    @OptionalField(key: .string(Column.prekeysLowNoticedAt)) var prekeysLowNoticedAt: Date?
    /// The name the device or its user gave it, shown only to the account itself.
    @OptionalField(key: .string(Column.name)) var name: String?
    /// When the device last signed in or called the relay (`DeviceActivity`'s granularity).
    @OptionalField(key: .string(Column.lastSeenAt)) var lastSeenAt: Date?

    init() {}

    init(userID: UUID, deviceID: UUID, identity: Data, registeredAt: Date) {
        self.id = UUID()
        self.userID = userID
        self.deviceID = deviceID
        self.identity = identity
        self.registeredAt = registeredAt
    }
}
