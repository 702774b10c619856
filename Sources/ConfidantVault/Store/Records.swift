import Foundation
import GRDB

/// Database rows. Titles, texts, file names and content types are stored sealed
/// (``SealedText``); ids, times, sizes and object hashes are in the clear.
struct MetaRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "vault_meta"
    var id: Int = 1
    var wrappedKey: Data
    var createdAt: Date
}

struct ChapterRecord: Codable, FetchableRecord, PersistableRecord {
    static func databaseUUIDEncodingStrategy(for column: String) -> DatabaseUUIDEncodingStrategy { .lowercaseString }
    static let databaseTableName = "chapter"
    var id: UUID
    var titleSealed: Data
    var createdAt: Date
}

struct ItemRecord: Codable, FetchableRecord, PersistableRecord {
    static func databaseUUIDEncodingStrategy(for column: String) -> DatabaseUUIDEncodingStrategy { .lowercaseString }
    static let databaseTableName = "item"
    var id: UUID
    var chapterId: UUID
    var timestamp: Date
    /// "text" or "media", as the seed's item type.
    var kind: String
    var textSealed: Data?
}

struct MediaRecord: Codable, FetchableRecord, PersistableRecord {
    static func databaseUUIDEncodingStrategy(for column: String) -> DatabaseUUIDEncodingStrategy { .lowercaseString }
    static let databaseTableName = "media"
    var id: UUID
    var itemId: UUID
    var position: Int
    var nameSealed: Data
    var contentTypeSealed: Data
    var size: Int
    /// SHA-256 (hex) of the encrypted object: its name in `objects/`.
    var objectHash: String
}

enum VaultSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "vault_meta") { t in
                t.primaryKey("id", .integer).check { $0 == 1 }
                t.column("wrappedKey", .blob).notNull()
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "chapter") { t in
                t.primaryKey("id", .text)
                t.column("titleSealed", .blob).notNull()
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "item") { t in
                t.primaryKey("id", .text)
                t.belongsTo("chapter", onDelete: .cascade).notNull()
                t.column("timestamp", .datetime).notNull()
                t.column("kind", .text).notNull()
                t.column("textSealed", .blob)
            }
            try db.create(table: "media") { t in
                t.primaryKey("id", .text)
                t.belongsTo("item", onDelete: .cascade).notNull()
                t.column("position", .integer).notNull()
                t.column("nameSealed", .blob).notNull()
                t.column("contentTypeSealed", .blob).notNull()
                t.column("size", .integer).notNull()
                t.column("objectHash", .text).notNull()
            }
        }
        return migrator
    }
}
