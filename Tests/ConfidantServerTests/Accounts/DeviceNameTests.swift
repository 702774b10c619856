import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

/// `GET /v1/devices` and `PUT /v1/devices/{id}/name`: a device's name and last activity, seen by
/// its own account only, on SQLite and (under Tests/run.sh) PostgreSQL.
@Suite("Device names and last activity")
struct DeviceNameTests {
    @Test(
        "an account names its devices, sees when each was last active, and nobody else sees or changes either",
        arguments: TestDatabaseKind.allCases)
    func namesAndActivity(kind: TestDatabaseKind) async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        try await TestRelay.run(kind, adjust: { $0.now = clock.now }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let signedIn = clock.now()
            var listed = try await alice.client.listOwnDevices().ok.body.json
            #expect(listed.map(\.deviceId) == [alice.identity.deviceID.canonicalString])
            #expect(listed.first?.name == nil)
            #expect(listed.first?.lastSeenAt.map { abs($0.timeIntervalSince(signedIn)) < 1 } == true)

            let device = Operations.RenameDevice.Input.Path(deviceId: alice.identity.deviceID.canonicalString)
            _ = try await alice.client.renameDevice(path: device, body: .json(.init(name: "  Work laptop  ")))
                .noContent
            listed = try await alice.client.listOwnDevices().ok.body.json
            #expect(listed.first?.name == "Work laptop")

            // Bob sees neither name nor activity, and cannot rename Alice's device.
            let bobs = try await bob.client.listOwnDevices().ok.body.json
            #expect(bobs.map(\.deviceId) == [bob.identity.deviceID.canonicalString])
            let foreign = try await bob.client.renameDevice(path: device, body: .json(.init(name: "Mine now")))
            #expect(try foreign.problem == "not_found 404")
            #expect(try await relay.client().listOwnDevices().problem == "unauthenticated 401")
            let anonymous = try await relay.client().renameDevice(path: device, body: .json(.init(name: "x")))
            #expect(try anonymous.problem == "unauthenticated 401")
            #expect(try await alice.client.listOwnDevices().ok.body.json.first?.name == "Work laptop")

            for bad in [
                "", "   ", String(repeating: "x", count: 41), "tab\u{7}bell", "a\u{85}b", "line\nbreak", "\u{2028}",
                " " + String(repeating: "x", count: 39) + " ",
            ] {
                let refused = try await alice.client.renameDevice(path: device, body: .json(.init(name: bad)))
                #expect(try refused.problem == "invalid_device_name 400", "name \(bad.debugDescription)")
            }
            let fortyEmoji = String(repeating: "🔐", count: 40)  // 40 code points
            _ = try await alice.client.renameDevice(path: device, body: .json(.init(name: fortyEmoji))).noContent
            let malformed = try await alice.client.renameDevice(
                path: .init(deviceId: "not-a-uuid"), body: .json(.init(name: "x")))
            #expect(try malformed.problem == "malformed_request 400")

            // Activity is written at most once per granularity, and a request after it moves it.
            clock.advance(by: 60)
            _ = try await alice.client.listOwnDevices().ok
            #expect(try await Self.lastSeen(alice) == signedIn)
            clock.advance(by: 300)
            let later = clock.now()
            _ = try await alice.client.listOwnDevices().ok
            #expect(try await Self.lastSeen(alice) == later)

            // A replaced key keeps the device's name; a removed device leaves the list.
            let replaced = try PrivateIdentity.generate(deviceID: alice.identity.deviceID)
            let again = try await TestUser.signIn(
                relay, id: alice.id, email: alice.email, password: alice.password, identity: replaced)
            #expect(try await again.client.listOwnDevices().ok.body.json.map(\.name) == [fortyEmoji])
            let phone = try await TestUser.signIn(
                relay, id: alice.id, email: alice.email, password: alice.password, identity: .generate())
            #expect(try await phone.client.listOwnDevices().ok.body.json.count == 2)
            _ = try await again.client.removeDevice(path: .init(deviceId: phone.identity.deviceID.canonicalString))
                .noContent
            #expect(try await again.client.listOwnDevices().ok.body.json.count == 1)
            let gone = try await again.client.renameDevice(
                path: .init(deviceId: phone.identity.deviceID.canonicalString), body: .json(.init(name: "Old phone")))
            #expect(try gone.problem == "not_found 404")
        }
    }

    /// The device's last activity as its account lists it, to the second.
    private static func lastSeen(_ user: TestUser) async throws -> Date? {
        try await user.client.listOwnDevices().ok.body.json.first {
            $0.deviceId == user.identity.deviceID.canonicalString
        }?
        .lastSeenAt.map { Date(timeIntervalSince1970: $0.timeIntervalSince1970.rounded()) }
    }
}

extension Operations.RenameDevice.Output: ProblemOutput {}
extension Operations.ListOwnDevices.Output: ProblemOutput {}
