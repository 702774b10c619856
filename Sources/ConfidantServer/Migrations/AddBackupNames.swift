import Fluent
import SQLKit

/// Version 2: named backup objects are blobs with a name, unique per owner.
struct AddBackupNames: AsyncMigration {
    var name: String { "confidant.v2.backup-names" }

    func prepare(on database: any Database) async throws {
        try await database.schema(BlobRecord.schema).field(.string(BlobRecord.Column.backupName), .string).update()
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.create(index: "blobs_owner_backup_name").on(BlobRecord.schema).unique()
            .column(BlobRecord.Column.ownerID).column(BlobRecord.Column.backupName).run()
    }

    func revert(on database: any Database) async throws {
        if let sql = database as? any SQLDatabase {
            try await sql.raw("DROP INDEX IF EXISTS blobs_owner_backup_name").run()
        }
        try await database.schema(BlobRecord.schema).deleteField(.string(BlobRecord.Column.backupName)).update()
    }
}
