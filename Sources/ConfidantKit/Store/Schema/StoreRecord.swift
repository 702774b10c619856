import ConfidantCrypto
import Foundation
import GRDB

// The local store's rows as GRDB records. Ids are stored as lowercase text and times as seconds
// since 1970 (REAL), as the first version of the schema did; sealed columns hold AES-GCM boxes
// under the profile's `LocalDataKey`.

/// Common encoding for the store's records. The records read for every message (messages, keys,
/// the queues, contacts) decode their rows by hand (`init(row:)`): GRDB's `Decodable` path was a
/// hot path (docs/BENCHMARKS.md). Writes still go through `Encodable`.
protocol StoreRecord: Codable, FetchableRecord, PersistableRecord {}

extension Row {
    /// The value of a record's column, named by its coding key.
    func value<Value: DatabaseValueConvertible>(_ column: some CodingKey) throws -> Value {
        try decode(forColumn: column.stringValue)
    }

    func date(_ column: some CodingKey) throws -> Date { try date(column.stringValue) }
    func dateIfPresent(_ column: some CodingKey) throws -> Date? { try dateIfPresent(column.stringValue) }
    func uuid(_ column: some CodingKey) throws -> UUID { try uuid(column.stringValue) }
    func uuidIfPresent(_ column: some CodingKey) throws -> UUID? { try uuidIfPresent(column.stringValue) }

    /// A time stored as seconds since 1970.
    func date(_ column: String) throws -> Date {
        Date(timeIntervalSince1970: try decode(Double.self, forColumn: column))
    }

    func dateIfPresent(_ column: String) throws -> Date? {
        try decode(Double?.self, forColumn: column).map(Date.init(timeIntervalSince1970:))
    }

    /// A UUID stored as text (the store's form) or as 16 bytes. Not GRDB's decoding, which parses
    /// text with Foundation's `UUID(uuidString:)` and so `sscanf`, three times per line of every
    /// fetch of a chat.
    func uuid(_ column: String) throws -> UUID {
        guard let value = try uuidIfPresent(column) else {
            throw ConfidantKitError.storeDamaged("`\(column)` has no UUID")
        }
        return value
    }

    /// ``uuid(_:)``, nil for NULL.
    func uuidIfPresent(_ column: String) throws -> UUID? {
        try withUnsafeData(named: column) { data -> UUID? in
            guard let data else { return nil }
            let value = data.withUnsafeBytes { raw -> UUID? in
                raw.count == 16
                    ? UUID(uuid: raw.loadUnaligned(as: uuid_t.self))
                    : UUID(hyphenatedUTF8: raw.bindMemory(to: UInt8.self))
            }
            guard let value else { throw ConfidantKitError.storeDamaged("`\(column)` is not a UUID") }
            return value
        }
    }
}

extension StoreRecord {
    static func databaseUUIDEncodingStrategy(for column: String) -> DatabaseUUIDEncodingStrategy { .lowercaseString }
    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        .timeIntervalSince1970
    }
}

/// What state an outgoing message is in; received messages and notices are `received`.
enum MessageState: String, Codable, DatabaseValueConvertible {
    case pending, sent, delivered, read, failed, received
}

extension ChatMessage.Direction: DatabaseValueConvertible {}
extension ChatMessage.NoticeKind: DatabaseValueConvertible {}

/// `meta`: one sealed or plain value per key.
struct MetaRecord: StoreRecord {
    static let databaseTableName = "meta"
    enum Key: String {
        case dataKey = "data_key"
        case account, cursor, prekeys
        /// When a synced write was last needed for a deferred one (`LocalStore.sync(through:)`).
        case syncedAt = "synced_at"
        /// Present once the attachment files have their scoped names (`AttachmentFile`).
        case attachmentFiles = "attachment_files"
    }

    var key: String
    var value: Data

    enum Columns {
        static let key = Column(CodingKeys.key)
    }
}
