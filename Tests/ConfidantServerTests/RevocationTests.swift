import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import NIOWebSocket
import Testing

@Suite("Revoked sessions lose their open streams")
struct RevocationTests {
    /// Waits until the stream ends (`expectedWithin` at most: only a hang fails) and says how it
    /// was closed; nil if it stays open.
    static func closeCode(of stream: StreamClient) async throws -> WebSocketErrorCode? {
        _ = await stream.frames.first { _ in false }
        guard stream.socket.isClosed else { return nil }
        try await stream.socket.onClose.get()
        return stream.socket.closeCode
    }

    @Test(
        "sign-out, device removal and account deletion close the streams of the sessions they end (4401), and only those",
        arguments: TestDatabaseKind.allCases)
    func streamsClose(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let watcher = try await StreamClient.connect(port: relay.port, user: alice)
            #expect(await watcher.frames.next(1).first?.caughtUp == true)

            // Sign-out: the stream opened with that session closes.
            let bobStream = try await StreamClient.connect(port: relay.port, user: bob)
            #expect(await bobStream.frames.next(1).first?.caughtUp == true)
            _ = try await bob.client.signOut().noContent
            #expect(try await Self.closeCode(of: bobStream) == .unknown(4401))

            // Device removal: a second device's stream closes when the first removes it.
            let bobAgain = try await TestUser.signIn(
                relay, id: bob.id, email: bob.email, password: bob.password, identity: bob.identity)
            let phone = try await TestUser.signIn(
                relay, id: bob.id, email: bob.email, password: bob.password, identity: try PrivateIdentity.generate())
            let phoneStream = try await StreamClient.connect(port: relay.port, user: phone)
            #expect(await phoneStream.frames.next(1).first?.caughtUp == true)
            _ = try await bobAgain.client.removeDevice(path: .init(deviceId: phone.identity.deviceID.uuidString))
                .noContent
            #expect(try await Self.closeCode(of: phoneStream) == .unknown(4401))

            // Account deletion: every stream of the account closes.
            let laptopStream = try await StreamClient.connect(port: relay.port, user: bobAgain)
            #expect(await laptopStream.frames.first { $0.caughtUp == true } != nil)
            _ = try await bobAgain.client.deleteAccount(body: .json(.init(password: bob.password))).noContent
            #expect(try await Self.closeCode(of: laptopStream) == .unknown(4401))

            // Alice's stream saw the key changes and is still open.
            #expect(!watcher.socket.isClosed)
            let carol = try await TestUser.make(relay, name: "carol")
            _ = try await carol.send("still here", to: [(alice.address, alice.identity.publicIdentity)])
            let carolID = carol.id.uuidString
            let entry = try #require(
                await watcher.frames.first { $0.entry?.senderUserId.lowercased() == carolID.lowercased() }?.entry)
            #expect(try alice.read(entry, from: carol) == "still here")
            await watcher.close()
        }
    }

    @Test(
        "a session revoked on one instance stops working on another at once: its stream closes and its cached token is refused"
    )
    func acrossInstances() async throws {
        let cluster = try Prerequisite.postgresCluster()
        try await TwoInstances.run(in: cluster) { relayA, relayB in
            let bob = try await TestUser.make(relayA, name: "bob")
            let onB = relayB.client(token: bob.token)
            _ = try await onB.fetchMailbox().ok  // B now holds the session in its cache
            let stream = try await StreamClient.connect(port: relayB.port, user: bob)
            #expect(await stream.frames.next(1).first?.caughtUp == true)
            _ = try await bob.client.signOut().noContent  // on A
            #expect(try await Self.closeCode(of: stream) == .unknown(4401))
            // The stream closed after B applied the revocation, so B's cache has forgotten the token
            // (well within SessionCache.lifetime).
            #expect(try await onB.fetchMailbox().problem == "unauthenticated 401")
        }
    }
}
