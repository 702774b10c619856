import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

@testable import ConfidantServer

/// The limits `confidant serve` has out of the box, each tested at its shipped value (the other
/// limit tests set small values of their own, so a changed default would pass them): a relay
/// with `shipped: true` relaxes nothing, and an injected clock moves time instead of waiting.
@Suite("The shipped defaults")
struct ShippedDefaultsTests {
    @Test("five sign-ups from one address go at once; the sixth is asked to wait")
    func signUpsPerAddress() async throws {
        let clock = ManualClock()
        try await TestRelay.run(shipped: true, adjust: { $0.now = clock.now }) { relay in
            #expect(ServerConfiguration.embedded().freeSignUpsPerAddress == 5)
            for index in 0..<5 { _ = try await TestUser.make(relay, name: "user\(index)") }
            let sixth = try await relay.client().signUp(
                body: .json(
                    .init(email: "sixth-\(UUID())@example.com", password: "a long enough password", displayName: "Six"))
            )
            #expect(try sixth.problem == "rate_limited 429")
        }
    }

    @Test("ten sign-ins started for one account in ten minutes; the eleventh waits for the window")
    func signInStartsPerAccount() async throws {
        let clock = ManualClock()
        try await TestRelay.run(shipped: true, adjust: { $0.now = clock.now }) { relay in
            let erin = try await TestUser.make(relay, name: "erin")  // its sign-up's sign-in is the first
            for _ in 0..<9 { #expect(try await Self.startSignIn(erin, relay) == nil) }
            #expect(try await Self.startSignIn(erin, relay) == "rate_limited 429")
            clock.advance(by: 601)
            #expect(try await Self.startSignIn(erin, relay) == nil)
        }
    }

    @Test("30 sign-ins started from one address in ten minutes, whichever accounts they name")
    func signInStartsPerAddress() async throws {
        let clock = ManualClock()
        try await TestRelay.run(shipped: true, adjust: { $0.now = clock.now }) { relay in
            var users: [TestUser] = []
            for index in 0..<4 { users.append(try await TestUser.make(relay, name: "user\(index)")) }
            // Four sign-ups started four; 26 more stay under each account's ten.
            for index in 0..<26 { #expect(try await Self.startSignIn(users[index % 4], relay) == nil) }
            #expect(try await Self.startSignIn(users[0], relay) == "rate_limited 429")
            #expect(try await Self.startSignIn(users[3], relay) == "rate_limited 429")
        }
    }

    @Test("200 prekey bundles claimed an hour by one user; the next waits for the hour")
    func prekeyClaims() async throws {
        let clock = ManualClock()
        try await TestRelay.run(shipped: true, adjust: { $0.now = clock.now }) { relay in
            let mallory = try await TestUser.make(relay, name: "mallory")
            let bob = try await TestUser.make(relay, name: "bob")
            let prekeys = try DevicePrekeys.generate()
            _ = try await bob.client.uploadPrekeys(
                body: .json(PrekeyRouteTests.upload(prekeys, oneTime: [], by: bob.identity))
            ).ok
            for _ in 0..<200 { #expect(try await PrekeyRouteTests.claim(mallory.client, bob).count == 1) }
            let refused = try await mallory.client.claimPrekeyBundles(
                path: .init(userId: bob.id.canonicalString), query: .init())
            #expect(try refused.problem == "rate_limited 429")
            clock.advance(by: 3601)
            #expect(try await PrekeyRouteTests.claim(mallory.client, bob).count == 1)
        }
    }

    @Test("3,000 sends at once per account, then 60 a second")
    func sendRate() async throws {
        let clock = ManualClock()
        try await TestRelay.run(shipped: true, adjust: { $0.now = clock.now }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            for index in 0..<3_000 { _ = try await alice.send("burst \(index)", to: toBob) }
            let refused = try await alice.client.sendMessage(body: .json(alice.batch("one more", to: toBob)))
            #expect(try refused.problem == "rate_limited 429")
            clock.advance(by: 1)
            for index in 0..<60 { _ = try await alice.send("refilled \(index)", to: toBob) }
            let past = try await alice.client.sendMessage(body: .json(alice.batch("61st", to: toBob)))
            #expect(try past.problem == "rate_limited 429")
        }
    }

    @Test("an account stores 5 GiB of blobs and backup objects")
    func storageQuota() async throws {
        try await TestRelay.run(shipped: true) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            // What an account that uploaded all but 10,000 bytes of its quota has on record.
            let quota: Int64 = 5 << 30
            try await relay.server.services.database.write { db in
                try await BlobRecord(
                    id: UUID(), ownerID: alice.id, size: quota - 10_000, sha256: String(repeating: "0", count: 64),
                    createdAt: Date()
                ).create(on: db)
            }
            let bytes = [UInt8](repeating: 1, count: 10_000)
            _ = try await alice.client.uploadBlob(body: .binary(HTTPBody(bytes))).created
            let over = try await alice.client.uploadBlob(body: .binary(HTTPBody([1])))
            #expect(try over.problem == "quota_exceeded 413")
        }
    }

    @Test("sizes: a JSON body 4 MiB, an envelope 64 KiB, an avatar 1 MiB, an attachment 25 MiB")
    func sizes() async throws {
        try await TestRelay.run(shipped: true) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let base = "http://127.0.0.1:\(relay.port)/v1"
            let token = "Bearer \(alice.token)"
            let json = "{\"pad\": \"" + String(repeating: "a", count: 4 << 20) + "\"}"
            let (jsonStatus, jsonCode) = try await RelayStreamTests.raw(
                .PATCH, base + "/account", token: token, body: json)
            #expect(jsonStatus == 413 && jsonCode == "too_large")
            let envelope = try alice.batch(
                String(repeating: "x", count: 64 << 10), to: [(bob.address, bob.identity.publicIdentity)])
            let tooBig = try await alice.client.sendMessage(body: .json(envelope))
            #expect(try tooBig.problem == "too_large 413")
            let avatar = try await alice.client.setAvatar(
                body: .png(HTTPBody([UInt8](repeating: 0, count: (1 << 20) + 1))))
            #expect(try avatar.problem == "too_large 413")
            let attachment = try await alice.client.uploadBlob(
                body: .binary(HTTPBody([UInt8](repeating: 2, count: (25 << 20) + 1))))
            #expect(try attachment.problem == "too_large 413")
            _ = try await alice.client.uploadBlob(body: .binary(HTTPBody([UInt8](repeating: 2, count: 25 << 20))))
                .created
        }
    }

    /// `nil` when a sign-in for `user` started, else the problem (`"error status"`).
    static func startSignIn(_ user: TestUser, _ relay: TestRelay) async throws -> String? {
        try await relay.client().startSignIn(
            body: .json(try await .proving(email: user.email, identity: user.identity, on: relay.client()))
        ).problem
    }
}
