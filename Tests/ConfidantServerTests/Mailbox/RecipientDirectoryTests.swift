import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantServer

/// The send group's one lookup of recipients, with more users than a statement may bind.
@Suite("Recipient directory")
struct RecipientDirectoryTests {
    @Test(
        "70,000 named users, more than PostgreSQL binds in one statement: the lookup answers for all of them",
        arguments: TestDatabaseKind.allCases)
    func manyUsers(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let strangers = (0..<70_000).map { _ in UUID() }
            let directory = try await RecipientDirectory.load(
                strangers + [alice.id], readingLastCursor: kind == .sqlite, on: relay.server.application.db)
            #expect(directory.users == [alice.id])
            #expect(directory.devices == [alice.id: [alice.address]])
            #expect(directory.pending.isEmpty)
        }
    }

    @Test(
        "messages stored before are found in the same statement, and only those (UNION ALL with the directory)",
        arguments: TestDatabaseKind.allCases)
    func earlierReceipts(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let sent = UUID()
            _ = try await alice.send("once", to: [(bob.address, bob.identity.publicIdentity)], messageID: sent)
            let fresh = UUID()
            let directory = try await RecipientDirectory.load(
                [alice.id, bob.id], readingLastCursor: kind == .sqlite,
                postedPairs: [(alice.id, sent), (alice.id, fresh), (bob.id, sent)], on: relay.server.application.db)
            #expect(Set(directory.posted.keys) == [PostedMessageTable.Key(sender: alice.id, message: sent)])
            #expect(directory.posted.values.map(\.stored) == [1])
            // The directory's own rows are read as before.
            #expect(directory.users == [alice.id, bob.id])
            #expect(directory.pending == [bob.address: 1])
            if kind == .sqlite { #expect((directory.lastCursor ?? 0) >= 1) }
        }
    }

    @Test("the check's shortcut decides every list of up to four recipients as the rule with sets does")
    func checkMatchesTheRule() {
        let alice = UUID()
        let bob = UUID()
        let carol = UUID()
        let dave = UUID()
        let a1 = DeviceAddress(userID: alice, deviceID: UUID())
        let a2 = DeviceAddress(userID: alice, deviceID: UUID())
        let retired = DeviceAddress(userID: alice, deviceID: UUID())
        let b1 = DeviceAddress(userID: bob, deviceID: UUID())
        let unknown = DeviceAddress(userID: carol, deviceID: UUID())
        let deviceless = DeviceAddress(userID: dave, deviceID: UUID())
        let directory = RecipientDirectory(
            users: [alice, bob, dave], devices: [alice: [a1, a2], bob: [b1]], pending: [:], lastCursor: nil, posted: [:]
        )
        // The rule, as sets: every current device of each user involved but the sender's own,
        // and nothing else (a device named twice counts once), from known users only.
        func rule(_ recipients: [DeviceAddress], sender: DeviceAddress) -> Bool {
            let involved = Set(recipients.map(\.userID)).union([sender.userID])
            guard involved.isSubset(of: directory.users) else { return false }
            let expected = involved.reduce(into: Set<DeviceAddress>()) { $0.formUnion(directory.devices[$1] ?? []) }
            return Set(recipients) == expected.subtracting([sender])
        }
        let pool = [a1, a2, retired, b1, unknown, deviceless]
        var lists: [[DeviceAddress]] = [[]]
        for _ in 0..<4 {
            lists += lists.filter { $0.count == lists.map(\.count).max() }.flatMap { list in pool.map { list + [$0] } }
        }
        #expect(lists.count == 1 + 6 + 36 + 216 + 1296)
        var accepted = 0
        for sender in [a1, b1, retired] {
            for list in lists {
                let allowed = (try? directory.check(list, sender: sender)) != nil
                #expect(allowed == rule(list, sender: sender), "\(list) from \(sender)")
                if allowed { accepted += 1 }
            }
        }
        // Some lists pass (e.g. [a2, b1] from a1, and [a2, a2] from a1 through the sets), most do not.
        #expect(accepted > 10)
    }

    /// PostgreSQL: a send group's device locks and notice ride in the directory's first statement
    /// (`MailboxDeviceLocks`): taken there, and held by the transaction until it ends, so that
    /// another writer's try for one of them fails meanwhile.
    @Test(
        "on PostgreSQL the directory's statement takes the group's device locks, held until the transaction ends")
    func takesTheDeviceLocks() async throws {
        try await TestRelay.run(.postgres) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let db = relay.server.application.db
            let locks = MailboxDeviceLocks([bob.address, alice.address], instance: UUID())
            // On a connection of its own (the pool's), outside the transaction.
            let otherWriterLocks: @Sendable (DeviceAddress) async throws -> Bool = { address in
                try await RelayDatabase.sql(db).raw(
                    "SELECT pg_try_advisory_xact_lock(hashtextextended(\(bind: address.description), 0)) AS got"
                ).first()?.decode(column: "got", as: Bool.self) ?? false
            }
            try await db.transaction { transaction in
                let directory = try await RecipientDirectory.load(
                    [alice.id, bob.id], postedPairs: [(alice.id, UUID())], taking: locks, on: transaction)
                #expect(directory.locksTaken)
                #expect(directory.users == [alice.id, bob.id])
                #expect(try await otherWriterLocks(bob.address) == false)
                #expect(try await otherWriterLocks(alice.address) == false)
            }
            #expect(try await otherWriterLocks(bob.address))
        }
    }
}
