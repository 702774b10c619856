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
        arguments: TestDatabaseKind.available)
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
        arguments: TestDatabaseKind.available)
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
}
