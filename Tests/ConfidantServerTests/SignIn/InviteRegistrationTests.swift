import ConfidantAPI
import ConfidantServer
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// `--registration invite|closed`: who may create an account, with codes the operator makes
/// (`confidant admin invite`), on SQLite and PostgreSQL.
@Suite("Sign-up by invite")
struct InviteRegistrationTests {
    static func signUp(_ relay: TestRelay, _ name: String, invite: String?) async throws -> String? {
        let output = try await relay.client().signUp(
            body: .json(
                .init(
                    email: "\(name)-\(UUID().uuidString.prefix(6).lowercased())@example.com",
                    password: "a long enough password", displayName: name, invite: invite)))
        if case .created = output { return nil }
        return try output.problem
    }

    @Test(
        "A code signs up as many accounts as it allows, typed any way; nothing else does",
        arguments: TestDatabaseKind.allCases)
    func usesAndRefusals(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.registration = .invite }) { relay in
            #expect(try await Self.signUp(relay, "nobody", invite: nil) == "invite_required 403")
            #expect(try await Self.signUp(relay, "blank", invite: "  ") == "invite_required 403")
            #expect(try await Self.signUp(relay, "guess", invite: "AAAA-BBBB-CCCC-DDDD-EEEE") == "invite_invalid 403")
            #expect(try await Self.signUp(relay, "junk", invite: "not a code") == "invite_invalid 403")
            let (code, invite) = try await relay.server.administration(as: "test").createInvite(
                uses: 2, lifetime: 86_400)
            #expect(invite.state == .active)
            #expect(try await Self.signUp(relay, "first", invite: code) == nil)
            let typed = code.lowercased().replacingOccurrences(of: "-", with: " ")
            #expect(try await Self.signUp(relay, "second", invite: typed) == nil)
            #expect(try await Self.signUp(relay, "third", invite: code) == "invite_invalid 403")
            let listed = try await relay.server.administration(as: "test").listInvites()
            #expect(listed.map(\.state) == [.usedUp])
            #expect(listed.first?.used == 2)
        }
    }

    @Test("Expired and revoked codes sign nobody up", arguments: TestDatabaseKind.allCases)
    func expiredAndRevoked(kind: TestDatabaseKind) async throws {
        let clock = ManualClock()
        try await TestRelay.run(
            kind,
            adjust: {
                $0.registration = .invite
                $0.now = clock.now
            }
        ) { relay in
            let admin = relay.server.administration(as: "test")
            let (expiring, _) = try await admin.createInvite(uses: 5, lifetime: 3_600)
            let (revoked, revokedInvite) = try await admin.createInvite(uses: 5, lifetime: 86_400)
            #expect(try await admin.revokeInvite(revokedInvite.id))
            #expect(try await admin.revokeInvite(UUID()) == false)
            #expect(try await Self.signUp(relay, "revoked", invite: revoked) == "invite_invalid 403")
            clock.advance(by: 3_601)
            #expect(try await Self.signUp(relay, "late", invite: expiring) == "invite_invalid 403")
            #expect(Set(try await admin.listInvites().map(\.state)) == [.expired, .revoked])
            await #expect(throws: AdministrationError.self) { try await admin.createInvite(uses: 0, lifetime: 86_400) }
            await #expect(throws: AdministrationError.self) { try await admin.createInvite(uses: 1, lifetime: 60) }
        }
    }

    @Test("Sign-ups racing for a single-use code: exactly one gets the account", arguments: TestDatabaseKind.allCases)
    func racingSignUps(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.registration = .invite }) { relay in
            let (code, _) = try await relay.server.administration(as: "test").createInvite(uses: 1, lifetime: 86_400)
            let outcomes = try await withThrowingTaskGroup(of: String?.self) { group in
                for index in 0..<8 { group.addTask { try await Self.signUp(relay, "racer\(index)", invite: code) } }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1)
            #expect(outcomes.filter { $0 == "invite_invalid 403" }.count == 7)
        }
    }

    @Test("A closed server takes no sign-up; an open one needs no code")
    func closedAndOpen() async throws {
        try await TestRelay.run(adjust: { $0.registration = .closed }) { relay in
            let (code, _) = try await relay.server.administration(as: "test").createInvite(uses: 1, lifetime: 86_400)
            #expect(try await Self.signUp(relay, "closed", invite: code) == "registration_closed 403")
        }
        try await TestRelay.run { relay in
            let plain = try await Self.signUp(relay, "open", invite: nil)
            let ignored = try await Self.signUp(relay, "open-ignored", invite: "anything")
            #expect(plain == nil && ignored == nil)
        }
    }
}
