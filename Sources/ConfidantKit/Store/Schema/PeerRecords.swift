import ConfidantCrypto
import Foundation
import GRDB

/// `contact`: a user this profile knows, sealed, with a keyed hash of the e-mail for lookups.
struct ContactRecord: StoreRecord {
    static let databaseTableName = "contact"

    var userID: UUID
    var emailLookup: Data
    /// The JSON of `Contact`, sealed.
    var sealed: Data
    /// A digest of the keys the user verified (their safety number), nil when not verified.
    var verifiedDigest: Data?

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case userID = "user_id"
        case emailLookup = "email_lookup"
        case sealed
        case verifiedDigest = "verified_digest"
    }

    typealias Columns = CodingKeys
}

extension ContactRecord {
    init(row: Row) throws {
        userID = try row.uuid(CodingKeys.userID)
        emailLookup = try row.value(CodingKeys.emailLookup)
        sealed = try row.value(CodingKeys.sealed)
        verifiedDigest = try row.value(CodingKeys.verifiedDigest)
    }
}

/// `contact_key`: every device key seen for a user; retired keys stay, so old envelopes can
/// still be told apart from forgeries.
struct ContactKeyRecord: StoreRecord {
    static let databaseTableName = "contact_key"

    var userID: UUID
    var deviceID: UUID
    var fingerprint: String
    /// The serialized `PublicIdentity` (docs/PROTOCOL.md §2).
    var identity: Data
    var firstSeen: Date
    var retiredAt: Date?

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case userID = "user_id"
        case deviceID = "device_id"
        case fingerprint, identity
        case firstSeen = "first_seen"
        case retiredAt = "retired_at"
    }

    typealias Columns = CodingKeys
}

extension ContactKeyRecord {
    init(row: Row) throws {
        userID = try row.uuid(CodingKeys.userID)
        deviceID = try row.uuid(CodingKeys.deviceID)
        fingerprint = try row.value(CodingKeys.fingerprint)
        identity = try row.value(CodingKeys.identity)
        firstSeen = try row.date(CodingKeys.firstSeen)
        retiredAt = try row.dateIfPresent(CodingKeys.retiredAt)
    }
}

/// `session`: the sessions with one peer device, sealed, bound to the key they were started with.
struct SessionRow: StoreRecord {
    static let databaseTableName = "session"

    var userID: UUID
    var deviceID: UUID
    var fingerprint: String
    /// The serialized `SessionRecord`, sealed.
    var sealed: Data
    var updatedAt: Date

    enum CodingKeys: String, CodingKey, ColumnExpression {
        case userID = "user_id"
        case deviceID = "device_id"
        case fingerprint, sealed
        case updatedAt = "updated_at"
    }

    typealias Columns = CodingKeys
}
