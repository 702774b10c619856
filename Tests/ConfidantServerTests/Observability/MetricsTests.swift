import AsyncHTTPClient
import ConfidantAPI
import ConfidantServer
import ConfidantTestSupport
import Foundation
import NIOCore
import Testing

/// `GET /metrics` on the metrics listener, on SQLite and (under Tests/run.sh) PostgreSQL.
@Suite("Prometheus metrics")
struct MetricsTests {
    @Test(
        "the metrics listener counts requests by route pattern and status and shows what the relay holds, with no id, address or token",
        arguments: TestDatabaseKind.allCases)
    func scrape(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.metrics = MetricsAddress(port: 0) }) { relay in
            let port = try #require(relay.server.metricsPort)
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            _ = try await alice.send("metered", to: [(bob.address, bob.identity.publicIdentity)], messageID: UUID())
            _ = try await alice.client.listOwnDevices().ok
            _ = try await relay.client().listOwnDevices()  // 401
            let (unknown, _) = try await Self.get(relay.baseURL.absoluteString + "/v1/no/such/\(alice.id)")
            #expect(unknown == 401, "anonymous callers learn nothing but unauthenticated")
            let (apiMetrics, _) = try await Self.get(relay.baseURL.absoluteString + "/metrics")
            #expect(apiMetrics == 404, "the API's own port serves no metrics")

            let (status, text) = try await Self.get("http://127.0.0.1:\(port)/metrics")
            #expect(status == 200)
            #expect(text.contains(#"confidant_http_requests_total{route="/v1/devices",method="GET",status="200"} 1"#))
            #expect(text.contains(#"confidant_http_requests_total{route="/v1/devices",method="GET",status="401"} 1"#))
            #expect(text.contains(#"confidant_http_requests_total{route="unmatched",method="GET",status="401"} 1"#))
            #expect(text.contains(#"confidant_http_requests_total{route="unmatched",method="GET",status="404"} 1"#))
            #expect(
                text.contains(#"confidant_http_requests_total{route="/v1/auth/sign-in/:",method="POST",status="200"}"#))
            #expect(text.contains(#"confidant_http_request_duration_seconds_bucket{route="/v1/messages""#))
            #expect(text.contains("\nconfidant_accounts 2.0\n"))
            #expect(text.contains("\nconfidant_devices 2.0\n"))
            #expect(text.contains("\nconfidant_mailbox_entries_waiting 1"), "bob's message waits")
            #expect(text.contains("\nconfidant_streams_open 0"))
            #expect(text.contains("confidant_disk_free_bytes"))
            let stored = try #require(
                text.split(separator: "\n").first { $0.hasPrefix("confidant_mailbox_entries_stored_total ") })
            #expect((Double(stored.split(separator: " ").last ?? "") ?? 0) >= 1)
            for secret in [alice.email, bob.email, alice.token, alice.id.canonicalString, bob.id.canonicalString] {
                #expect(!text.contains(secret), "no account data in the metrics")
            }
            let (other, _) = try await Self.get("http://127.0.0.1:\(port)/v1/health")
            #expect(other == 404, "the metrics listener serves the metrics alone")
        }
    }

    @Test("without a metrics address there is no listener and nothing is counted")
    func offByDefault() async throws {
        try await TestRelay.run { relay in
            #expect(relay.server.metricsPort == nil)
            #expect(relay.server.configuration.metrics == nil)
        }
    }

    static func get(_ url: String) async throws -> (Int, String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .minutes(2))
        let body = try await response.body.collect(upTo: 4 << 20)
        return (Int(response.status.code), String(buffer: body))
    }
}
