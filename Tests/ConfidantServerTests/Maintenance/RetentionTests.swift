import ConfidantServer
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

/// The maintenance run's retention periods, as configured: each kind of record goes when its
/// period has passed and not before, the run says how many, and the metrics count them.
@Suite("Retention")
struct RetentionTests {
    @Test(
        "each kind of record goes after its configured period, counted in the report and the metrics",
        arguments: TestDatabaseKind.allCases)
    func periods(kind: TestDatabaseKind) async throws {
        let clock = ManualClock()
        try await TestRelay.run(
            kind,
            adjust: {
                $0.now = clock.now
                $0.metrics = MetricsAddress(port: 0)
                $0.unverifiedAccountLifetime = 86_400
                $0.auditRetention = 86_400
                $0.mailboxRetention = 2 * 86_400
                $0.attachmentRetention = 3 * 86_400
            }
        ) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            _ = try await alice.send("waits for bob", to: [(bob.address, bob.identity.publicIdentity)])
            _ = try await alice.client.uploadBlob(body: .binary(HTTPBody([1, 2, 3]))).created
            let never = "never-\(UUID())@example.com"
            _ = try await relay.client().signUp(
                body: .json(.init(email: never, password: "a password never used", displayName: "N"))
            ).created
            _ = try await relay.server.administration(as: "test").createInvite(uses: 1, lifetime: 7 * 86_400)

            let first = try await relay.server.runMaintenance()
            #expect(first == MaintenanceReport(), "nothing is old yet: \(first)")

            clock.advance(by: 1.5 * 86_400)
            let second = try await relay.server.runMaintenance()
            #expect(second.unverifiedAccounts == 1 && second.auditEntries == 1, "\(second)")
            #expect(second.signInRecords >= 2, "the sign-ins' transactions and challenges: \(second)")
            #expect(second.mailboxEntries == 0 && second.sentMessageRecords == 0 && second.attachments == 0)

            clock.advance(by: 2 * 86_400)
            let third = try await relay.server.runMaintenance()
            #expect(third.mailboxEntries == 1 && third.sentMessageRecords == 1 && third.attachments == 1, "\(third)")
            #expect(third.unverifiedAccounts == 0 && third.auditEntries == 0 && third.signInRecords == 0)
            #expect(try await bob.client.fetchMailbox().ok.body.json.entries.isEmpty)

            let port = try #require(relay.server.metricsPort)
            let (_, metrics) = try await MetricsTests.get("http://127.0.0.1:\(port)/metrics")
            for line in [
                #"kind="mailbox_entries"} 1"#, #"kind="unverified_accounts"} 1"#, #"kind="audit_entries"} 1"#,
                #"kind="attachments"} 1"#, #"kind="sent_message_records"} 1"#,
            ] {
                #expect(metrics.contains("confidant_maintenance_removed_total{\(line)"), "\(line) in \(metrics)")
            }
        }
    }

    @Test("without an audit retention the audit is kept")
    func auditKeptByDefault() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: { $0.now = clock.now }) { relay in
            #expect(relay.server.configuration.auditRetention == nil)
            _ = try await relay.server.administration(as: "test").createInvite(uses: 1, lifetime: 86_400)
            clock.advance(by: 3_650 * 86_400)
            #expect(try await relay.server.runMaintenance().auditEntries == 0)
            #expect(try await relay.server.administration(as: "test").audit().count == 1)
        }
    }
}
