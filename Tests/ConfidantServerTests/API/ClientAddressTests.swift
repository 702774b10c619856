import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import HTTPTypes
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import Testing

/// Who the client is behind a reverse proxy: only trusted proxies' `X-Forwarded-For` counts, and
/// then its rightmost untrusted entry, never what a client writes at its left.
@Suite("Client addresses behind proxies")
struct ClientAddressTests {
    @Test("networks parse and match, IPv4 and IPv6")
    func networks() throws {
        let ten = try #require(IPNetwork("10.0.0.0/8"))
        #expect(ten.contains("10.200.3.4") && !ten.contains("11.0.0.1") && !ten.contains("::1"))
        let v6 = try #require(IPNetwork("2001:db8::/32"))
        #expect(v6.contains("2001:db8:1::5") && !v6.contains("2001:db9::1") && v6.contains("[2001:db8::1]"))
        #expect(try #require(IPNetwork("127.0.0.1")).contains("127.0.0.1"))
        for bad in ["10.0.0.0/33", "nonsense", "10.0.0/8", "::1/129", ""] { #expect(IPNetwork(bad) == nil, "\(bad)") }
    }

    /// Signs in wrongly as `email`, saying the request was forwarded for `forwardedFor`.
    static func wrongSignIn(
        _ relay: TestRelay, email: String, identity: PrivateIdentity, forwardedFor: String?
    ) async throws
        -> String?
    {
        let client = Client(
            serverURL: relay.baseURL.appendingPathComponent("v1"), configuration: APIConfiguration.default,
            transport: AsyncHTTPClientTransport(), middlewares: [ForwardedFor(value: forwardedFor)])
        return try await client.signIn(
            body: .json(try await .proving(email: email, password: "wrong password!", identity: identity, on: client))
        ).problem
    }

    @Test(
        "behind a trusted proxy the rightmost untrusted address counts; a client cannot choose it by writing to the left"
    )
    func trustedProxy() async throws {
        try await TestRelay.run(adjust: {
            $0.trustedProxies = [IPNetwork("127.0.0.1/32")!, IPNetwork("10.0.0.0/8")!]
            $0.signInPolicy.baseDelay = 0
            $0.signInPolicy.lockoutThreshold = 2
        }) { relay in
            let users = try await (0..<4).asyncMap { try await TestUser.make(relay, name: "user\($0)") }
            let identity = users[0].identity
            // Two failures from 203.0.113.7 (behind an inner proxy 10.1.1.1), for two accounts:
            // the address is locked, whatever the client wrote at the left.
            #expect(
                try await Self.wrongSignIn(
                    relay, email: users[0].email, identity: identity,
                    forwardedFor: "198.51.100.1, 203.0.113.7, 10.1.1.1") == "invalid_credentials 401")
            #expect(
                try await Self.wrongSignIn(
                    relay, email: users[1].email, identity: identity,
                    forwardedFor: "198.51.100.2, 203.0.113.7") == "invalid_credentials 401")
            #expect(
                try await Self.wrongSignIn(
                    relay, email: users[2].email, identity: identity,
                    forwardedFor: "203.0.113.7") == "locked_out 429")
            // Another client behind the same proxy is not locked out with it.
            #expect(
                try await Self.wrongSignIn(
                    relay, email: users[3].email, identity: identity,
                    forwardedFor: "203.0.113.7, 192.0.2.55") == "invalid_credentials 401")
        }
    }

    @Test(
        "without trusted proxies X-Forwarded-For is ignored: one client cannot escape its own limits by inventing addresses"
    )
    func untrustedHeader() async throws {
        try await TestRelay.run(adjust: {
            $0.signInPolicy.baseDelay = 0
            $0.signInPolicy.lockoutThreshold = 2
        }) { relay in
            let users = try await (0..<3).asyncMap { try await TestUser.make(relay, name: "user\($0)") }
            let identity = users[0].identity
            #expect(
                try await Self.wrongSignIn(relay, email: users[0].email, identity: identity, forwardedFor: "192.0.2.1")
                    == "invalid_credentials 401")
            #expect(
                try await Self.wrongSignIn(relay, email: users[1].email, identity: identity, forwardedFor: "192.0.2.2")
                    == "invalid_credentials 401")
            #expect(
                try await Self.wrongSignIn(relay, email: users[2].email, identity: identity, forwardedFor: "192.0.2.3")
                    == "locked_out 429")
        }
    }
}

/// Adds `X-Forwarded-For`, as a proxy in front of the relay would.
struct ForwardedFor: ClientMiddleware {
    let value: String?

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let value, let name = HTTPField.Name("X-Forwarded-For") { request.headerFields[name] = value }
        return try await next(request, body, baseURL)
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
