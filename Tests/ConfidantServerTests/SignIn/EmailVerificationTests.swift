import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// An e-mail address belongs to whoever reads the mail sent to it: until a sign-in answers the
/// code mailed there, the account is out of the directory and has no device to receive on.
@Suite("E-mail ownership")
struct EmailVerificationTests {
    @Test("an unproved address is out of the directory until its first sign-in answers the mailed code")
    func verifiedByTheFirstSignIn() async throws {
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let email = "ceo-\(UUID().uuidString.prefix(6).lowercased())@example.com"
            let created = try await relay.client().signUp(
                body: .json(.init(email: email, password: "the real ceo's password", displayName: "The CEO"))
            ).created.body.json
            let ceoID = created.id

            // Not findable, by name or id, and nothing to send to.
            let listed = try await alice.client.listUsers(query: .init(query: "ceo")).ok.body.json.users
            #expect(listed.isEmpty)
            #expect(try await alice.client.getUser(path: .init(userId: ceoID)).problem == "not_found 404")

            // The password alone does not sign in: the code mailed to the address is asked for.
            let device = try PrivateIdentity.generate()
            let plain = try await relay.client().signIn(
                body: .json(
                    try await .proving(
                        email: email, password: "the real ceo's password", identity: device, on: relay.client())))
            #expect(try plain.problem == "step_up_required 403")
            _ = try await RawSignIn.withCode(
                relay, email: email, password: "the real ceo's password", identity: device)

            // Proved: in the directory, with its device.
            let found = try await alice.client.listUsers(query: .init(query: "ceo")).ok.body.json.users
            #expect(found.map(\.email) == [email])
            let user = try await alice.client.getUser(path: .init(userId: ceoID)).ok.body.json
            #expect(user.devices.count == 1)

            // Later sign-ins from that device need only the password again.
            let again = try await relay.client().signIn(
                body: .json(
                    try await .proving(
                        email: email, password: "the real ceo's password", identity: device, on: relay.client())))
            _ = try again.created
        }
    }

    @Test("signing up an address someone registered but never proved replaces that account; a proved one is taken")
    func squattingDoesNotKeepTheOwnerOut() async throws {
        // Sign-ups per address wait between attempts; not what is tested here.
        try await TestRelay.run(adjust: { $0.signInPolicy.baseDelay = 0 }) { relay in
            let email = "owner-\(UUID().uuidString.prefix(6).lowercased())@example.com"
            // A squatter registers the address first and cannot receive its code.
            _ = try await relay.client().signUp(
                body: .json(.init(email: email, password: "the squatter's password", displayName: "Owner"))
            ).created
            // The owner signs up all the same, and proves the address.
            _ = try await relay.client().signUp(
                body: .json(.init(email: email, password: "the owner's own password", displayName: "Owner"))
            ).created
            let device = try PrivateIdentity.generate()
            await #expect(throws: (any Error).self) {
                _ = try await RawSignIn.withCode(
                    relay, email: email, password: "the squatter's password", identity: device)
            }
            _ = try await RawSignIn.withCode(
                relay, email: email, password: "the owner's own password", identity: device)
            // Now it is taken.
            let late = try await relay.client().signUp(
                body: .json(.init(email: email, password: "the squatter's password", displayName: "Owner")))
            #expect(try late.problem == "email_taken 409")
        }
    }

    @Test("an account never proved is deleted after a week by the maintenance run; a proved one stays")
    func unprovedAccountsExpire() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: { $0.now = clock.now }) { relay in
            let kept = try await TestUser.make(relay, name: "kept")
            let email = "gone-\(UUID().uuidString.prefix(6).lowercased())@example.com"
            _ = try await relay.client().signUp(
                body: .json(.init(email: email, password: "a password never used", displayName: "Gone"))
            ).created
            func signIn() async throws -> String? {
                try await relay.client().signIn(
                    body: .json(
                        try await .proving(
                            email: email, password: "a password never used",
                            identity: try PrivateIdentity.generate(), on: relay.client()))
                ).problem
            }
            clock.advance(by: 6 * 86_400)
            try await relay.server.runMaintenance()
            // Six days: still there (the right password, and the code still to answer).
            #expect(try await signIn() == "step_up_required 403")
            clock.advance(by: 2 * 86_400)
            try await relay.server.runMaintenance()
            // Gone: the address is free, and a sign-in finds no account (the same answer as any
            // unknown address).
            #expect(try await signIn() == "invalid_credentials 401")
            _ = try await kept.client.currentAccount().ok
        }
    }
}
