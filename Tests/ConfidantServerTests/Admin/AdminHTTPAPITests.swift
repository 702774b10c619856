import AsyncHTTPClient
import ConfidantServer
import ConfidantTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The admin API on the metrics listener (`serve --admin-token-file`): only the token opens it,
/// every action answers JSON, refusals are Problems, and it is off without the file.
@Suite("Admin HTTP API")
struct AdminHTTPAPITests {
    /// A relay with the admin API, its token, and the API's base URL.
    static func run(
        _ kind: TestDatabaseKind = .sqlite, _ body: (TestRelay, String, String) async throws -> Void
    ) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-admin-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("admin-token")
        let token = try AdminTokenFile.create(at: file)
        try await TestRelay.run(
            kind,
            adjust: {
                $0.metrics = MetricsAddress(port: 0)
                $0.adminTokenFile = file
            }
        ) { relay in
            let port = try #require(relay.server.metricsPort)
            try await body(relay, token, "http://127.0.0.1:\(port)/admin/v1")
        }
    }

    /// Status and JSON body of one call; `token` nil sends none.
    static func call(
        _ method: HTTPMethod, _ url: String, token: String?, json: String? = nil
    ) async throws -> (status: Int, body: Any?, text: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .minutes(2))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        return (Int(response.status.code), try? JSONSerialization.jsonObject(with: Data(text.utf8)), text)
    }

    @Test("every action through the API, audited as the caller's address", arguments: TestDatabaseKind.allCases)
    func actions(kind: TestDatabaseKind) async throws {
        try await Self.run(kind) { relay, token, api in
            let bob = try await TestUser.make(relay, name: "bob")
            let stream = try await StreamClient.connect(port: relay.port, user: bob)
            #expect(await stream.frames.next(1).first?.caughtUp == true)
            let email = bob.email.lowercased()

            let listed = try await Self.call(.GET, "\(api)/accounts?search=bob&limit=10", token: token)
            #expect(listed.status == 200 && (listed.body as? [[String: Any]])?.first?["email"] as? String == email)
            let shown = try await Self.call(.GET, "\(api)/accounts/\(email)", token: token)
            #expect((shown.body as? [String: Any])?["activeSessions"] as? Int == 1, "\(shown.text)")
            let disabled = try await Self.call(
                .POST, "\(api)/accounts/\(bob.id.uuidString)/disable", token: token, json: #"{"reason":"spam"}"#)
            #expect(
                disabled.status == 200 && (disabled.body as? [String: Any])?["disabledAt"] != nil, "\(disabled.text)")
            #expect(try await RevocationTests.closeCode(of: stream) == .unknown(4401))
            #expect(try await Self.call(.POST, "\(api)/accounts/\(email)/enable", token: token).status == 200)

            let devices = try await Self.call(.DELETE, "\(api)/accounts/\(email)/devices/\(UUID())", token: token)
            #expect(devices.status == 404 && (devices.body as? [String: Any])?["error"] as? String == "not_found")
            let invite = try await Self.call(
                .POST, "\(api)/invites", token: token, json: #"{"uses":2,"expiresInSeconds":86400}"#)
            let created = try #require(invite.body as? [String: Any], "\(invite.text)")
            #expect(invite.status == 201 && (created["code"] as? String)?.count == 24)
            let inviteID = try #require((created["invite"] as? [String: Any])?["id"] as? String)
            #expect(try await Self.call(.DELETE, "\(api)/invites/\(inviteID)", token: token).status == 204)
            let stats = try await Self.call(.GET, "\(api)/stats", token: token)
            #expect((stats.body as? [String: Any])?["accounts"] as? Int == 1, "\(stats.text)")
            #expect(try await Self.call(.DELETE, "\(api)/accounts/\(email)", token: token).status == 200)

            let audit = try await Self.call(.GET, "\(api)/audit?limit=10", token: token)
            let entries = try #require(audit.body as? [[String: Any]], "\(audit.text)")
            #expect(
                entries.compactMap { $0["action"] as? String } == [
                    "account delete", "invite revoke", "invite create", "account enable", "account disable",
                ])
            #expect(entries.allSatisfy { $0["actor"] as? String == "http 127.0.0.1" }, "\(audit.text)")
        }
    }

    @Test("without the token, with a wrong one or a bad value, the API refuses and changes nothing")
    func refusals() async throws {
        try await Self.run { relay, token, api in
            let bob = try await TestUser.make(relay, name: "bob")
            let email = bob.email.lowercased()
            for bad in [nil, "", String(token.dropLast()) + (token.hasSuffix("A") ? "B" : "A"), token + "x"] {
                let answer = try await Self.call(.POST, "\(api)/accounts/\(email)/disable", token: bad, json: "{}")
                #expect(answer.status == 401, "\(bad ?? "none") → \(answer.text)")
                #expect((answer.body as? [String: Any])?["error"] as? String == "unauthenticated")
            }
            let refusals: [(HTTPMethod, String, String?, Int, String)] = [
                (.GET, "\(api)/accounts?limit=0", nil, 400, "malformed_request"),
                (.GET, "\(api)/accounts?limit=many", nil, 400, "malformed_request"),
                (.GET, "\(api)/accounts/nobody@example.com", nil, 404, "unknown_user"),
                (.POST, "\(api)/accounts/\(email)/enable", nil, 400, "malformed_request"),
                (
                    .POST, "\(api)/accounts/\(email)/disable", #"{"reason":"\#(String(repeating: "x", count: 201))"}"#,
                    400, "malformed_request"
                ),
                (.POST, "\(api)/accounts/\(email)/disable", "not json", 400, "malformed_request"),
                (
                    .POST, "\(api)/accounts/\(email)/disable",
                    #"{"reason":"\#(String(repeating: "x", count: 5_000))"}"#, 413, "too_large"
                ),
                (.DELETE, "\(api)/accounts/\(email)/devices/not-an-id", nil, 400, "malformed_request"),
                (.POST, "\(api)/invites", #"{"uses":0}"#, 400, "malformed_request"),
                (.DELETE, "\(api)/invites/\(UUID())", nil, 404, "not_found"),
                (.GET, "\(api)/nothing", nil, 404, "not_found"),
            ]
            for (method, url, json, status, code) in refusals {
                let answer = try await Self.call(method, url, token: token, json: json)
                #expect(answer.status == status, "\(method) \(url) → \(answer.text)")
                #expect(
                    (answer.body as? [String: Any])?["error"] as? String == code, "\(method) \(url) → \(answer.text)")
            }
            let audit = try await Self.call(.GET, "\(api)/audit", token: token)
            #expect((audit.body as? [Any])?.isEmpty == true, "nothing refused is audited: \(audit.text)")
            _ = try await bob.client.fetchMailbox().ok
            let (metrics, _) = try await MetricsTests.get("http://127.0.0.1:\(relay.server.metricsPort ?? 0)/metrics")
            #expect(metrics == 200, "the metrics need no token")
        }
    }

    @Test("a token file others may read, a short one, or one without the metrics listener is refused at start")
    func tokenFiles() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-admin-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let open = folder.appendingPathComponent("open")
        _ = try AdminTokenFile.create(at: open)
        #expect(throws: AdminTokenFileError.unwritable(open.path)) { try AdminTokenFile.create(at: open) }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: open.path)
        let short = folder.appendingPathComponent("short")
        try Data("too short\n".utf8).write(to: short)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: short.path)
        for (file, error) in [
            (open, AdminTokenFileError.tooOpen(open.path)), (short, .tooShort(short.path)),
            (folder.appendingPathComponent("missing"), .unreadable(folder.appendingPathComponent("missing").path)),
        ] {
            await #expect(throws: error) {
                try await TestRelay.run(adjust: {
                    $0.metrics = MetricsAddress(port: 0)
                    $0.adminTokenFile = file
                }) { _ in }
            }
        }
        await #expect(throws: ServerConfigurationError.adminAPIWithoutMetrics) {
            try await TestRelay.run(adjust: { $0.adminTokenFile = short }) { _ in }
        }
    }
}
