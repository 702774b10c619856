import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// The operator's account actions (`RelayServer.administration(as:)`, behind `confidant admin
/// account`): what each changes, that the sessions it ends stop at once, and the audit.
@Suite("Account administration")
struct AccountAdministrationTests {
    @Test(
        "a disabled account's stream closes (4401), its token and sign-in are refused, the directory hides it; enabled, it signs in again",
        arguments: TestDatabaseKind.allCases)
    func disableAndEnable(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let admin = relay.server.administration(as: "test operator")
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let stream = try await StreamClient.connect(port: relay.port, user: bob)
            #expect(await stream.frames.next(1).first?.caughtUp == true)

            let disabled = try await admin.disableAccount(bob.email.uppercased(), reason: "sent spam")
            #expect(disabled.id == bob.id && disabled.disabledAt != nil)
            #expect(try await RevocationTests.closeCode(of: stream) == .unknown(4401))
            #expect(try await bob.client.fetchMailbox().problem == "unauthenticated 401")
            let signIn = try await bob.client.signIn(
                body: .json(
                    try await .proving(
                        email: bob.email, password: bob.password, identity: bob.identity, on: relay.client())))
            #expect(try signIn.problem == "account_disabled 403")
            let found = try await alice.client.listUsers(query: .init(query: "bob")).ok.body.json.users
            #expect(found.isEmpty)
            await #expect(throws: AdministrationError.invalidValue("\(bob.email.lowercased()) is disabled already")) {
                try await admin.disableAccount(bob.email)
            }

            let enabled = try await admin.enableAccount(bob.id.uuidString)
            #expect(enabled.disabledAt == nil)
            let again = try await TestUser.signIn(
                relay, id: bob.id, email: bob.email, password: bob.password, identity: bob.identity)
            _ = try await again.client.fetchMailbox().ok
            #expect(try await alice.client.listUsers(query: .init(query: "bob")).ok.body.json.users.count == 1)

            let audit = try await admin.audit()
            #expect(audit.map(\.action) == ["account enable", "account disable"])
            #expect(audit.last?.detail == "sent spam" && audit.last?.actor == "test operator")
            #expect(audit.allSatisfy { $0.target.contains(bob.id.canonicalString) })
            await stream.close()
        }
    }

    @Test(
        "show and stats count devices, sessions and bytes; revoking a device closes its stream; deleting removes everything",
        arguments: TestDatabaseKind.allCases)
    func showRevokeDelete(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let admin = relay.server.administration(as: "test operator")
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let phone = try await TestUser.signIn(
                relay, id: bob.id, email: bob.email, password: bob.password, identity: try PrivateIdentity.generate())
            _ = try await bob.client.uploadBlob(body: .binary(HTTPBody([UInt8](repeating: 7, count: 1_000)))).created
            _ = try await bob.client.putBackupObject(path: .init(name: "manifest"), body: .binary(HTTPBody([1, 2, 3])))
                .ok
            _ = try await alice.send(
                "hello",
                to: [(bob.address, bob.identity.publicIdentity), (phone.address, phone.identity.publicIdentity)])

            let details = try await admin.account(bob.email)
            #expect(details.devices.map(\.id).sorted() == [bob.identity.deviceID, phone.identity.deviceID].sorted())
            #expect(details.activeSessions == 2)
            #expect(details.attachmentBytes == 1_000 && details.backupBytes == 3)
            #expect(details.waitingEntries >= 1)
            let before = try await admin.statistics()
            #expect(before.accounts == 2 && before.verifiedAccounts == 2 && before.devices == 3)
            #expect(before.attachmentBytes == 1_000 && before.backupBytes == 3)
            #expect(try await admin.listAccounts(search: "BOB").map(\.id) == [bob.id])
            #expect(try await admin.listAccounts().count == 2)
            #expect(try await admin.listAccounts(search: "%").isEmpty, "LIKE's wildcard matches nothing literally")

            let phoneStream = try await StreamClient.connect(port: relay.port, user: phone)
            #expect(await phoneStream.frames.first { $0.caughtUp == true } != nil)
            try await admin.revokeDevice(phone.identity.deviceID, of: bob.email)
            #expect(try await RevocationTests.closeCode(of: phoneStream) == .unknown(4401))
            #expect(try await admin.account(bob.email).devices.map(\.id) == [bob.identity.deviceID])
            let unknown = UUID()
            await #expect(
                throws: AdministrationError.noSuchDevice(unknown.canonicalString, account: bob.email.lowercased())
            ) {
                try await admin.revokeDevice(unknown, of: bob.email)
            }

            let stream = try await StreamClient.connect(port: relay.port, user: bob)
            #expect(await stream.frames.first { $0.caughtUp == true } != nil)
            let deleted = try await admin.deleteAccount(bob.id.uuidString)
            #expect(deleted.email == bob.email.lowercased())
            #expect(try await RevocationTests.closeCode(of: stream) == .unknown(4401))
            await #expect(throws: AdministrationError.noSuchAccount(bob.email)) { try await admin.account(bob.email) }
            let after = try await admin.statistics()
            #expect(after.accounts == 1 && after.devices == 1 && after.attachmentBytes == 0 && after.backupBytes == 0)
            #expect(try await alice.client.getUser(path: .init(userId: bob.id.uuidString)).problem == "not_found 404")
            let blobs = try FileManager.default.contentsOfDirectory(
                atPath: relay.dataDirectory.appendingPathComponent("blobs").path)
            #expect(blobs.filter { !$0.hasPrefix(".") }.isEmpty, "the deleted account's files are gone: \(blobs)")
            #expect(
                try await admin.audit().map(\.action) == ["account delete", "device revoke"],
                "a refused action is not audited")
        }
    }

    @Test("bad values are refused with what to give instead, and nothing is audited")
    func refusals() async throws {
        try await TestRelay.run { relay in
            let admin = relay.server.administration(as: "test operator")
            let alice = try await TestUser.make(relay, name: "alice")
            await #expect(throws: AdministrationError.noSuchAccount("nobody@example.com")) {
                try await admin.disableAccount("nobody@example.com")
            }
            await #expect(throws: AdministrationError.noSuchAccount("not an address")) {
                try await admin.deleteAccount("not an address")
            }
            await #expect(throws: AdministrationError.self) {
                try await admin.disableAccount(alice.email, reason: String(repeating: "x", count: 201))
            }
            await #expect(throws: AdministrationError.self) {
                try await admin.disableAccount(alice.email, reason: "line\u{1B}[2J")
            }
            await #expect(throws: AdministrationError.invalidValue("\(alice.email.lowercased()) is not disabled")) {
                try await admin.enableAccount(alice.email)
            }
            #expect(try await admin.audit().isEmpty)
            _ = try await alice.client.fetchMailbox().ok
        }
    }

    @Test(
        "an administration opened by another process (the CLI) ends a running relay's sessions: by the audit feed on SQLite, by NOTIFY on PostgreSQL",
        arguments: TestDatabaseKind.allCases)
    func fromAnotherProcess(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.revocationPollInterval = .milliseconds(50) }) { relay in
            let bob = try await TestUser.make(relay, name: "bob")
            _ = try await bob.client.fetchMailbox().ok  // the running relay now caches the session
            let stream = try await StreamClient.connect(port: relay.port, user: bob)
            #expect(await stream.frames.next(1).first?.caughtUp == true)
            let other = try await RelayServer(configuration: relay.server.configuration)
            do {
                _ = try await other.administration(as: "cli test").disableAccount(bob.email)
            } catch {
                await other.shutdown()
                throw error
            }
            await other.shutdown()
            #expect(try await RevocationTests.closeCode(of: stream) == .unknown(4401))
            // The stream closed once the relay applied the revocation, so its cache forgot the token.
            #expect(try await bob.client.fetchMailbox().problem == "unauthenticated 401")
        }
    }
}
