import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// Prekey upload and bundle claims through the real app, on SQLite and PostgreSQL.
@Suite("Relay prekeys")
struct PrekeyRouteTests {
    static func upload(_ prekeys: DevicePrekeys, oneTime: [OneTimePrekey], by identity: PrivateIdentity) throws
        -> Components.Schemas.PrekeyUpload
    {
        Components.Schemas.PrekeyUpload(try prekeys.upload(signedBy: identity, oneTimePrekeys: oneTime))
    }

    static func claim(_ client: Client, _ user: TestUser) async throws -> [Components.Schemas.PrekeyBundle] {
        try await client.claimPrekeyBundles(path: .init(userId: user.id.canonicalString), query: .init()).ok.body.json
    }

    static func notices(_ user: TestUser) async throws -> [Components.Schemas.MailboxEntry] {
        try await user.client.fetchMailbox(query: .init(after: 0, limit: 500)).ok.body.json.entries.filter {
            $0.kind == .prekeysLow
        }
    }

    @Test(
        "uploads are checked; bundles verify; each one-time prekey goes out once, even to concurrent claims",
        arguments: TestDatabaseKind.allCases)
    func uploadAndClaim(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            #expect(try await Self.claim(alice.client, bob).isEmpty, "no bundle before the device publishes one")
            var prekeys = try DevicePrekeys.generate()
            // Signed by someone else, or a one-time key of the wrong size: refused.
            let forged = try Self.upload(prekeys, oneTime: [], by: alice.identity)
            #expect(try await bob.client.uploadPrekeys(body: .json(forged)).problem == "invalid_prekey 400")
            var short = try Self.upload(prekeys, oneTime: [], by: bob.identity)
            short.oneTimePrekeys = [.init(id: 7, key: .init([1, 2, 3]))]
            #expect(try await bob.client.uploadPrekeys(body: .json(short)).problem == "invalid_prekey 400")
            #expect(try await relay.client().uploadPrekeys(body: .json(forged)).problem == "unauthenticated 401")
            #expect(
                try await relay.client().claimPrekeyBundles(path: .init(userId: bob.id.uuidString), query: .init())
                    .problem == "unauthenticated 401")

            let oneTime = Array(prekeys.allOneTimePrekeys.prefix(40))
            let status = try await bob.client.uploadPrekeys(
                body: .json(Self.upload(prekeys, oneTime: oneTime, by: bob.identity))
            ).ok.body.json
            #expect(status.oneTimePrekeys == 40)
            #expect(status.lowWater == 20)
            // 50 concurrent claims for 40 one-time prekeys: 40 distinct keys, 10 bundles without one.
            let claimed = try await withThrowingTaskGroup(of: Components.Schemas.PrekeyBundle?.self) { group in
                for _ in 0..<50 { group.addTask { try await Self.claim(alice.client, bob).first } }
                return try await group.reduce(into: [Components.Schemas.PrekeyBundle]()) {
                    if let bundle = $1 { $0.append(bundle) }
                }
            }
            #expect(claimed.count == 50)
            let ids = claimed.compactMap { $0.oneTimePrekey?.id }
            #expect(ids.count == 40)
            #expect(Set(ids) == Set(oneTime.map { Int64($0.id) }))
            for wire in claimed { try #require(PrekeyBundle(wire)).verify(for: bob.identity.publicIdentity) }
            // Below the low-water mark the device is told once, until it uploads again.
            var notices = try await Self.notices(bob)
            #expect(notices.count == 1)
            #expect(notices.first?.prekeys?.oneTimePrekeys ?? -1 < 20)
            #expect(notices.first?.senderDeviceId == bob.identity.deviceID.canonicalString)
            let more = prekeys.addOneTimePrekeys(30)
            #expect(
                try await bob.client.uploadPrekeys(body: .json(Self.upload(prekeys, oneTime: more, by: bob.identity)))
                    .ok.body.json.oneTimePrekeys == 30)
            for _ in 0..<12 { _ = try await Self.claim(alice.client, bob) }
            notices = try await Self.notices(bob)
            #expect(notices.count == 2)
            // At most 500 one-time prekeys are kept.
            let many = prekeys.addOneTimePrekeys(200)
            _ = try await bob.client.uploadPrekeys(body: .json(Self.upload(prekeys, oneTime: many, by: bob.identity)))
                .ok
            _ = try await bob.client.uploadPrekeys(
                body: .json(Self.upload(prekeys, oneTime: prekeys.addOneTimePrekeys(200), by: bob.identity))
            ).ok
            let tooMany = try Self.upload(prekeys, oneTime: prekeys.addOneTimePrekeys(200), by: bob.identity)
            #expect(try await bob.client.uploadPrekeys(body: .json(tooMany)).problem == "too_many_prekeys 400")
            // A new key for the device drops its prekeys: they were signed by the old one.
            let renewed = try await TestUser.signIn(
                relay, id: bob.id, email: bob.email, password: bob.password,
                identity: PrivateIdentity.generate(deviceID: bob.identity.deviceID))
            #expect(try await Self.claim(alice.client, renewed).isEmpty)
            #expect(try await renewed.client.prekeyStatus().ok.body.json.oneTimePrekeys == 0)
        }
    }

    @Test(
        "one requester cannot drain a device's one-time prekeys: claims are limited per requester",
        arguments: TestDatabaseKind.allCases)
    func claimsAreRateLimited(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.prekeyClaims = .init(limit: 5, window: 3600) }) { relay in
            let mallory = try await TestUser.make(relay, name: "mallory")
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let prekeys = try DevicePrekeys.generate()
            _ = try await bob.client.uploadPrekeys(
                body: .json(
                    Self.upload(prekeys, oneTime: Array(prekeys.allOneTimePrekeys.prefix(50)), by: bob.identity))
            ).ok
            for _ in 0..<5 { #expect(try await Self.claim(mallory.client, bob).first?.oneTimePrekey != nil) }
            let refused = try await mallory.client.claimPrekeyBundles(
                path: .init(userId: bob.id.canonicalString), query: .init())
            #expect(try refused.problem == "rate_limited 429")
            // Bob still has one-time prekeys for everyone else.
            #expect(try await Self.claim(alice.client, bob).first?.oneTimePrekey != nil)
            #expect(try await bob.client.prekeyStatus().ok.body.json.oneTimePrekeys == 44)
        }
    }
}
