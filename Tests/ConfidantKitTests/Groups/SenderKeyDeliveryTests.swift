import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import GRDB
import Testing

@testable import ConfidantKit

/// Group messages with sender keys through a real relay (docs/PROTOCOL.md §10.4): uploaded once
/// for every member device, and the envelopes taken off the relay's database tried with the keys
/// of a member added later (cannot open what came before) and of a removed one (cannot open what
/// follows).
@Suite("Sender keys between messengers")
struct SenderKeyDeliveryTests {
    @Test(
        "one upload per group message; a member added later cannot open what came before, a removed one what follows"
    )
    func sealedOnceForMembersOnly() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                try await KitUser.removing(try await KitUser.register(relay, name: "Bob")) { bob in
                    try await KitUser.removing(try await KitUser.register(relay, name: "Carol")) { carol in
                        try await KitUser.removing(try await KitUser.register(relay, name: "Dave")) { dave in
                            try await Self.run(relay, alice, bob, carol, dave)
                        }
                    }
                }
            }
        }
    }

    private static func run(_ relay: TestRelay, _ alice: KitUser, _ bob: KitUser, _ carol: KitUser, _ dave: KitUser)
        async throws
    {
        let (a, b, c, d) = (alice.messenger, bob.messenger, carol.messenger, dave.messenger)
        let relayDatabase = try RelayFile(relay)
        let group = try await a.createGroup(name: "Four", members: [await bob.contact, await carol.contact]).groupID
        let first = try await a.sendToGroup(group, text: "before Dave")
        #expect(first.status == .sent)
        // One body on the relay, referred to by Bob's and Carol's entries.
        let before = try #require(try relayDatabase.body(of: first.id))
        #expect(try relayDatabase.sharedEntries(of: first.id) == 2)
        for messenger in [b, c] { _ = try await messenger.sync() }
        #expect(try relayDatabase.body(of: first.id) == nil, "gone with the last acknowledgement")
        for messenger in [b, c] {
            #expect(try await messenger.groupHistory(group).map(\.text) == ["before Dave"])
        }

        // Dave joins and reads what follows, not what came before.
        _ = try await a.addToGroup(group, [await dave.contact])
        for messenger in [b, c, d] { _ = try await messenger.sync() }
        let second = try await a.sendToGroup(group, text: "welcome, Dave")
        let welcome = try #require(try relayDatabase.body(of: second.id))
        _ = try await d.sync()
        #expect(try await d.groupHistory(group).map(\.text) == ["welcome, Dave"])
        let earlier = try GroupEnvelope(serialized: before)
        let daveHolds = try #require(try d.store.read { try d.store.receivingChain(earlier.message.chainID, $0) })
        var daveChain = daveHolds.chain
        #expect(throws: SenderKeyError.duplicate, "Dave's copy of the chain starts after it") {
            _ = try earlier.open(with: &daveChain)
        }

        // Carol is removed: Alice's next message is under a new chain Carol never got.
        _ = try await a.removeFromGroup(group, [await c.me])
        for messenger in [b, c, d] { _ = try await messenger.sync() }
        let third = try await a.sendToGroup(group, text: "without Carol")
        let after = try GroupEnvelope(serialized: try #require(try relayDatabase.body(of: third.id)))
        #expect(after.message.chainID != earlier.message.chainID)
        #expect(try relayDatabase.sharedEntries(of: third.id) == 2, "Bob's and Dave's devices only")
        #expect(try c.store.read { try c.store.receivingChain(after.message.chainID, $0) } == nil)
        var carolChain = try #require(try c.store.read { try c.store.receivingChain(earlier.message.chainID, $0) })
            .chain
        #expect(throws: SenderKeyError.wrongChain, "her old chain does not open the new one's messages") {
            _ = try after.open(with: &carolChain)
        }
        for messenger in [b, d] { _ = try await messenger.sync() }
        #expect(try await b.groupHistory(group).map(\.text) == ["before Dave", "welcome, Dave", "without Carol"])
        #expect(try await d.groupHistory(group).last?.text == "without Carol")
        _ = try await c.sync()
        #expect(try await c.groupHistory(group).map(\.text).contains("without Carol") == false)
        #expect(try GroupEnvelope(serialized: welcome).sender.userID == (await a.me))
    }
}

/// The relay's SQLite file, read beside the running relay.
private struct RelayFile {
    let queue: DatabaseQueue

    init(_ relay: TestRelay) throws {
        guard case .sqlite(let path) = relay.database else { throw CancellationError() }
        var configuration = Configuration()
        configuration.readonly = true
        queue = try DatabaseQueue(path: path, configuration: configuration)
    }

    /// The shared body of a message, while an entry refers to it.
    func body(of message: UUID) throws -> Data? {
        try queue.read { db in
            try Data.fetchOne(
                db, sql: "SELECT payload FROM shared_bodies WHERE message_id = ?", arguments: [message.uuidString])
        }
    }

    /// How many mailbox entries refer to the message's shared body.
    func sharedEntries(of message: UUID) throws -> Int {
        try queue.read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM mailbox WHERE kind = 'shared_envelope' AND message_id = ?",
                arguments: [message.uuidString]) ?? 0
        }
    }
}
