import Fluent
import SQLKit

/// Version 6: device challenges used up by sign-ins, and when an account's e-mail address was
/// verified. Accounts that already had a device signed in count as verified from their sign-up
/// (they existed before verification did); the others verify at their next sign-in.
struct AddDeviceProofs: AsyncMigration {
    var name: String { "confidant.v6.device-proofs" }

    func prepare(on database: any Database) async throws {
        typealias Used = UsedChallengeRecord.Column
        typealias User = UserRecord.Column
        typealias Device = DeviceRecord.Column
        try await database.schema(UsedChallengeRecord.schema)
            .field(.string(Used.nonce), .string, .identifier(auto: false))
            .field(.string(Used.expiresAt), .datetime, .required)
            .create()
        try await database.schema(UserRecord.schema).field(.string(User.emailVerifiedAt), .datetime).update()
        let sql = try RelayDatabase.sql(database)
        try await sql.raw(
            """
            UPDATE \(ident: UserRecord.schema) SET \(ident: User.emailVerifiedAt) = \(ident: User.createdAt)
            WHERE EXISTS (SELECT 1 FROM \(ident: DeviceRecord.schema) AS d
                          WHERE d.\(ident: Device.userID) = \(ident: UserRecord.schema).\(ident: "id"))
            """
        ).run()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(UserRecord.schema).deleteField(.string(UserRecord.Column.emailVerifiedAt)).update()
        try await database.schema(UsedChallengeRecord.schema).delete()
    }
}
