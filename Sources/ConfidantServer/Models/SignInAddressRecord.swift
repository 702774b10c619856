import Fluent
import Foundation

/// Addresses an account has signed in from, for the adaptive policy's "known address".
final class SignInAddressRecord: Model, @unchecked Sendable {
    static let schema = "sign_in_addresses"

    /// Column names, for the fields below, the migrations and SQL alike.
    enum Column {
        static let userID = "user_id"
        static let address = "address"
        static let lastSeen = "last_seen"
    }

    @ID(key: .id) var id: UUID?
    @Field(key: .string(Column.userID)) var userID: UUID
    @Field(key: .string(Column.address)) var address: String
    @Field(key: .string(Column.lastSeen)) var lastSeen: Date

    init() {}

    init(userID: UUID, address: String, lastSeen: Date) {
        id = UUID()
        self.userID = userID
        self.address = address
        self.lastSeen = lastSeen
    }
}
