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
}
