import ConfidantCrypto
import ConfidantTestSupport
import Fluent
import Foundation
import SQLKit
import Testing

@testable import ConfidantServer

/// PostgreSQL's mailbox counts (`MailboxCountTable`): kept by the database's triggers through
/// every way entries come and go, and folded by the sends that read them.
@Suite("PostgreSQL's mailbox counts")
struct MailboxCountTableTests {
    @Test(
        "each device's count matches its entries through sends, acknowledgements, retention and a deleted account; sends fold a device's rows; maintenance drops those of devices gone"
    )
    func countsFollowEntries() async throws {
        let clock = ManualClock()
        try await TestRelay.run(
            .postgres,
            adjust: {
                $0.now = clock.now
                $0.mailboxRetention = 30 * 86_400
                $0.sessionLifetime = 90 * 86_400
            }
        ) { relay in
            let sql = try Self.sql(relay)
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            for index in 0..<(2 * MailboxCountTable.foldAt + 3) {
                _ = try await alice.send("to bob \(index)", to: toBob)
            }
            _ = try await alice.send("to carol", to: [(carol.address, carol.identity.publicIdentity)])
            #expect(try await Self.mismatches(sql) == 0)
            #expect(try await Self.waiting(bob.address, sql) == 2 * MailboxCountTable.foldAt + 3)
            // One row per send until the rows reach `foldAt`; the send that finds that many folds them.
            #expect(try await Self.rows(bob.address, sql) < MailboxCountTable.foldAt)

            let page = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 10)).ok.body.json
            _ = try await bob.client.acknowledge(body: .json(.init(cursors: page.entries.map(\.cursor)))).ok
            #expect(try await Self.mismatches(sql) == 0)
            #expect(try await Self.waiting(bob.address, sql) == 2 * MailboxCountTable.foldAt + 3 - 10)

            _ = try await carol.client.deleteAccount(body: .json(.init(password: carol.password))).noContent
            #expect(try await Self.mismatches(sql) == 0)
            #expect(try await Self.waiting(carol.address, sql) == 0)

            clock.advance(by: 31 * 86_400)
            try await relay.server.runMaintenance()
            #expect(try await Self.mismatches(sql) == 0)
            #expect(try await Self.waiting(bob.address, sql) == 0)
            #expect(try await Self.rows(carol.address, sql) == 0, "a deleted account's rows go with maintenance")
            #expect(try await Self.rows(bob.address, sql) > 0, "a current device's rows stay")
        }
    }

    @Test("the migration counts the entries already stored, and the limit holds with its counts")
    func migrationCountsExistingEntries() async throws {
        try await TestRelay.run(.postgres, adjust: { $0.mailboxLimit = 3 }) { relay in
            let sql = try Self.sql(relay)
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            for index in 0..<3 { _ = try await alice.send("before \(index)", to: toBob) }
            let db = relay.server.services.database.db
            try await CountMailboxEntries().revert(on: db)
            try await CountMailboxEntries().prepare(on: db)
            #expect(try await Self.waiting(bob.address, sql) == 3)
            #expect(try await Self.rows(bob.address, sql) == 1)
            #expect(try await Self.mismatches(sql) == 0)
            let refused = try await alice.client.sendMessage(body: .json(alice.batch("one too many", to: toBob)))
            #expect(try refused.problem == "quota_exceeded 413")
        }
    }

    @Test("a send group folds at most so many devices that its statement stays under PostgreSQL's bound values")
    func foldingIsBounded() async throws {
        try await TestRelay.run(.postgres) { relay in
            let sql = try Self.sql(relay)
            let devices = (0..<(MailboxCountTable.maximumFolded + 1_000)).map { _ in
                DeviceAddress(userID: UUID(), deviceID: UUID())
            }
            var binds = 0
            for companion in MailboxCountTable.folding(devices) {
                var serializer = SQLSerializer(database: sql)
                companion.query.serialize(to: &serializer)
                binds += serializer.binds.count
            }
            #expect(binds == 2 * MailboxCountTable.maximumFolded)
            #expect(8_000 + 36_000 + binds <= 65_535)
        }
    }

    private static func sql(_ relay: TestRelay) throws -> any SQLDatabase {
        guard let sql = relay.server.services.database.db as? any SQLDatabase else {
            throw APIFailure(.internal, "The relay's database speaks no SQL.")
        }
        return sql
    }

    /// Devices whose count differs from the entries in their mailbox.
    private static func mismatches(_ sql: any SQLDatabase) async throws -> Int {
        try await integer(
            """
            SELECT COUNT(*) AS value FROM (SELECT recipient_user_id, recipient_device_id, COUNT(*) AS n FROM mailbox \
            GROUP BY 1, 2) AS m FULL JOIN (SELECT recipient_user_id, recipient_device_id, SUM(entries) AS n \
            FROM mailbox_counts GROUP BY 1, 2 HAVING SUM(entries) <> 0) AS c \
            USING (recipient_user_id, recipient_device_id) WHERE m.n IS DISTINCT FROM c.n
            """, sql)
    }

    private static func waiting(_ device: DeviceAddress, _ sql: any SQLDatabase) async throws -> Int {
        try await ofDevice("CAST(COALESCE(SUM(entries), 0) AS BIGINT)", device, sql)
    }

    private static func rows(_ device: DeviceAddress, _ sql: any SQLDatabase) async throws -> Int {
        try await ofDevice("COUNT(*)", device, sql)
    }

    /// `column` over the device's rows in `mailbox_counts`, written here apart from the relay's own query.
    private static func ofDevice(_ column: String, _ device: DeviceAddress, _ sql: any SQLDatabase) async throws -> Int
    {
        try await integer(
            """
            SELECT \(column) AS value FROM mailbox_counts \
            WHERE recipient_user_id = '\(device.userID.uuidString)' AND recipient_device_id = '\(device.deviceID.uuidString)'
            """, sql)
    }

    private static func integer(_ query: String, _ sql: any SQLDatabase) async throws -> Int {
        try await sql.raw(SQLQueryString(query)).first()?.decode(column: "value", as: Int.self) ?? -1
    }
}
