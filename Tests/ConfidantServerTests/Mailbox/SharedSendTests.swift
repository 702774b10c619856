import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Fluent
import Foundation
import OpenAPIRuntime
import SQLKit
import Testing

@testable import ConfidantServer

extension Operations.SendSharedMessage.Output: ProblemOutput {}

/// Shared sends (docs/PROTOCOL.md §7.2 version 3): one group envelope for many devices, stored
/// once, over HTTP and the stream, on SQLite and PostgreSQL.
@Suite("Shared sends")
struct SharedSendTests {
    @Test(
        "a group envelope is stored once for every device, delivered as sent, and goes with the last acknowledgement; a retry stores nothing",
        arguments: TestDatabaseKind.allCases)
    func storedOnce(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            let (envelope, id) = try Self.groupEnvelope(from: alice, text: "hello, both")
            let frame = try SharedSendFrame(recipients: [bob.address, carol.address], envelope: envelope)
            let receipt = try await alice.client.sendSharedMessage(body: .binary(HTTPBody(frame.serialized())))
                .ok.body.json
            #expect(receipt.stored == 2 && !receipt.duplicate && receipt.messageId == id.canonicalString)
            #expect(try await Self.bodies(on: relay) == 1, "one body for both devices")

            // Each device reads the envelope as it was sent.
            var cursors: [(TestUser, Int64)] = []
            for user in [bob, carol] {
                let entries = try await user.client.fetchMailbox(query: .init()).ok.body.json.entries
                #expect(entries.count == 1)
                let entry = try #require(entries.first)
                #expect(entry.kind == .envelope && entry.messageId == id.canonicalString)
                #expect(entry.envelope.map { Data($0.data) } == envelope)
                cursors.append((user, entry.cursor))
            }

            // A retry, over HTTP or the stream, is a duplicate and stores nothing.
            let retry = try await alice.client.sendSharedMessage(body: .binary(HTTPBody(frame.serialized())))
                .ok.body.json
            #expect(retry.duplicate && retry.receivedAt == receipt.receivedAt)
            let stream = try await RelayStreamSendTests.connect(relay, alice)
            try await stream.sendBinary(frame.serialized())
            #expect(await stream.frames.next(1).first?.receipt?.duplicate == true)
            await stream.close()
            #expect(try await Self.bodies(on: relay) == 1)

            // Bob's acknowledgement leaves it for Carol; hers takes it away.
            _ = try await bob.client.acknowledge(body: .json(.init(cursors: [cursors[0].1]))).ok
            #expect(try await Self.bodies(on: relay) == 1)
            _ = try await carol.client.acknowledge(body: .json(.init(cursors: [cursors[1].1]))).ok
            #expect(try await Self.bodies(on: relay) == 0)
        }
    }

    @Test(
        "a shared send is refused to anonymous callers, for another sender, for stale device lists, malformed, and as an envelope of another send",
        arguments: TestDatabaseKind.allCases)
    func refusals(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let mallory = try await TestUser.make(relay, name: "mallory")
            let (envelope, _) = try Self.groupEnvelope(from: alice, text: "for Bob")
            let frame = try SharedSendFrame(recipients: [bob.address], envelope: envelope)
            func send(_ bytes: Data, as user: TestUser?) async throws -> String? {
                let client = user?.client ?? relay.client()
                return try await client.sendSharedMessage(body: .binary(HTTPBody(bytes))).problem
            }
            #expect(try await send(frame.serialized(), as: nil) == "unauthenticated 401")
            #expect(try await send(frame.serialized(), as: mallory) == "sender_mismatch 403")
            let stale = try SharedSendFrame(
                recipients: [DeviceAddress(userID: bob.id, deviceID: UUID())], envelope: envelope)
            #expect(try await send(stale.serialized(), as: alice) == "device_mismatch 409")
            let toSelf = try SharedSendFrame(recipients: [bob.address, alice.address], envelope: envelope)
            #expect(try await send(toSelf.serialized(), as: alice) == "malformed_request 400")
            var truncated = frame.serialized()
            truncated.removeLast()
            #expect(try await send(truncated, as: alice) == "malformed_request 400")
            let notGroup = try SharedSendFrame(recipients: [bob.address], envelope: Data(repeating: 2, count: 200))
            #expect(try await send(notGroup.serialized(), as: alice) == "invalid_envelope 400")
            // A group envelope in a one-recipient send has no recipient to go to.
            let batch = Components.Schemas.MessageBatch(
                messageId: UUID().canonicalString,
                envelopes: [
                    .init(
                        recipientUserId: bob.id.canonicalString,
                        recipientDeviceId: bob.identity.deviceID.canonicalString,
                        envelope: .init(envelope))
                ])
            #expect(try await alice.client.sendMessage(body: .json(batch)).problem == "invalid_envelope 400")
            #expect(try await Self.bodies(on: relay) == 0)
            #expect(try await bob.client.fetchMailbox(query: .init()).ok.body.json.entries.isEmpty)
        }
    }

    /// A group envelope from `user`'s device, sealed with a chain of its own.
    static func groupEnvelope(from user: TestUser, text: String) throws -> (Data, UUID) {
        var chain = SenderKeySendingChain(groupID: UUID())
        let id = UUID()
        let envelope = try GroupEnvelope.seal(
            Data(text.utf8), chain: &chain, sender: user.address, messageID: id, timestamp: Date())
        return (envelope.serialized, id)
    }

    /// How many shared bodies the relay's database holds.
    static func bodies(on relay: TestRelay) async throws -> Int {
        try await relay.server.services.database.write { db in
            try await RelayDatabase.sql(db).select().column(SQLFunction("COUNT", args: SQLLiteral.all), as: "n")
                .from(SharedBodyTable.schema).first()?.decode(column: "n", as: Int.self) ?? -1
        }
    }
}
