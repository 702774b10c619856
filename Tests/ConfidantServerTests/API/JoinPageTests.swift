import AsyncHTTPClient
import ConfidantTestSupport
import Foundation
import NIOCore
import Testing

/// `GET /join?code=…`, the page an invite link opens.
@Suite("The invite link's page")
struct JoinPageTests {
    @Test(
        "a code is shown grouped with how to use the link; a damaged one is refused; no script, no referrer, not kept")
    func page() async throws {
        try await TestRelay.run { relay in
            let base = relay.baseURL.absoluteString
            let good = try await Self.get(base + "/join?code=k7qm2xpa9d3ft8rwb5ne")
            #expect(good.status == 200 && good.body.contains("<code>K7QM-2XPA-9D3F-T8RW-B5NE</code>"))
            #expect(good.body.contains("Create an account") && good.body.contains("confidant account register"))
            #expect(good.headers["Content-Security-Policy"] == ["default-src 'none'"])
            #expect(good.headers["Referrer-Policy"] == ["no-referrer"] && good.headers["Cache-Control"] == ["no-store"])
            for bad in ["", "?code=", "?code=%3Cscript%3Ealert(1)%3C/script%3E", "?code=AAAA"] {
                let refused = try await Self.get(base + "/join" + bad)
                #expect(refused.status == 400 && refused.body.contains("damaged"), "\(bad)")
                #expect(!refused.body.contains("<script"))
            }
        }
    }

    static func get(_ url: String) async throws -> (status: Int, headers: [String: [String]], body: String) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .minutes(1))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
        var headers: [String: [String]] = [:]
        for (name, value) in response.headers { headers[name, default: []].append(value) }
        return (Int(response.status.code), headers, body)
    }
}
