import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import SQLKit
import Testing

@testable import ConfidantServer

/// Version 9 of the schema: sent-message records keyed by (sender, message id).
@Suite("Sent-message records")
struct PostedMessageKeyTests {
    @Test(
        "records keep answering retries through the migration to version 9 and back; the surrogate id is gone",
        arguments: TestDatabaseKind.allCases)
    func migrationKeepsRecords(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let recipients = [(bob.address, bob.identity.publicIdentity)]
            let first = UUID()
            let second = UUID()
            let stored = try await alice.send("one", to: recipients, messageID: first)
            #expect(!stored.duplicate)
            let db = relay.server.application.db
            let sql = try RelayDatabase.sql(db)
            func columns() async throws -> Set<String> {
                let query: SQLQueryString =
                    kind == .sqlite
                    ? "SELECT name FROM pragma_table_info('posted_messages')"
                    : "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'posted_messages'"
                return Set(try await sql.raw(query).all().map { try $0.decode(column: "name", as: String.self) })
            }
            #expect(try await columns() == ["sender_user_id", "message_id", "stored", "received_at"])

            try await KeyPostedMessages().revert(on: db)
            #expect(try await columns().contains("id"))
            // A record as a version 8 relay stored it, with its id; then the migration.
            try await sql.insert(into: PostedMessageRecord.schema)
                .columns("id", "sender_user_id", "message_id", "stored", "received_at")
                .values(UUIDValue(UUID()), UUIDValue(alice.id), UUIDValue(second), SQLBind(1), SQLBind(Date()))
                .run()
            try await KeyPostedMessages().prepare(on: db)
            #expect(try await columns() == ["sender_user_id", "message_id", "stored", "received_at"])

            for (id, text) in [(first, "one"), (second, "two")] {
                let retry = try await alice.send(text, to: recipients, messageID: id)
                #expect(retry.duplicate, "\(text)")
                #expect(retry.stored == 1)
            }
            let entries = try await bob.client.fetchMailbox(query: .init()).ok.body.json.entries
            #expect(entries.count == 1)

            // Maintenance and account deletion still find them.
            let removed = try await relay.server.services.database.write { db in
                try await PostedMessageTable.deleteReceived(before: Date().addingTimeInterval(60), on: db)
            }
            #expect(removed > 0, "the sent-message records were found")
            #expect(!(try await alice.send("one", to: recipients, messageID: first).duplicate))
        }
    }
}
