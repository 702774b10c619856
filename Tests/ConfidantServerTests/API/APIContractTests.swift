import AsyncHTTPClient
import ConfidantAPI
import ConfidantTestSupport
import Foundation
import NIOCore
import Testing

/// The served API document against the server's behaviour.
@Suite("API contract")
struct APIContractTests {
    /// Every operation in openapi.yaml, with whether it declares `security: []`.
    static func operations() throws -> [(method: String, path: String, isPublic: Bool)] {
        let text = String(decoding: try APIDocument.yaml(), as: UTF8.self)
        var operations: [(method: String, path: String, isPublic: Bool)] = []
        var path: String?
        var inPaths = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            if inPaths, !line.isEmpty, !line.hasPrefix(" ") { break }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                let method = ["get", "post", "put", "delete", "head"].first(where: { line == "    \($0):" })
            {
                operations.append((method.uppercased(), path, false))
            } else if line == "      security: []", !operations.isEmpty {
                operations[operations.count - 1].isPublic = true
            }
        }
        return operations
    }

    @Test("exactly the operations the document marks `security: []` answer without a session")
    func publicOperationsMatchTheDocument() async throws {
        let operations = try Self.operations()
        #expect(operations.count > 30, "the document was read: \(operations.count) operations")
        #expect(operations.contains { $0.path == "/auth/challenges" && $0.isPublic })
        try await TestRelay.run { relay in
            for operation in operations {
                let path = operation.path.replacingOccurrences(
                    of: #"\{[^}]+\}"#, with: UUID().canonicalString, options: .regularExpression)
                var request = HTTPClientRequest(url: relay.baseURL.absoluteString + "/v1" + path)
                request.method = .init(rawValue: operation.method)
                if operation.method == "POST" || operation.method == "PUT" {
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(string: "{}"))
                }
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
                // A HEAD answer has no body: its status says it all.
                let refused =
                    response.status.code == 401
                    && (operation.method == "HEAD" || body.contains("\"unauthenticated\""))
                #expect(
                    refused != operation.isPublic,
                    "\(operation.method) \(operation.path): \(response.status.code) \(body.prefix(200))")
            }
        }
    }

    /// One raw request: its status, `Allow` header and body.
    static func send(
        _ relay: TestRelay, _ method: String, _ path: String, token: String? = nil, contentType: String? = nil,
        body: String? = nil
    ) async throws -> (status: Int, allow: String?, body: String) {
        var request = HTTPClientRequest(url: relay.baseURL.absoluteString + path)
        request.method = .init(rawValue: method)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        return (Int(response.status.code), response.headers.first(name: "Allow"), text)
    }

    @Test("a JSON body that does not say it is JSON in UTF-8, or is not UTF-8, is refused with 415")
    func jsonBodiesAreUTF8() async throws {
        try await TestRelay.run { relay in
            let form = #"{"email":"x@example.com","password":"long enough password"}"#
            func status(_ type: String?, _ body: Data) async throws -> Int {
                var request = HTTPClientRequest(url: relay.baseURL.absoluteString + "/v1/accounts")
                request.method = .POST
                if let type { request.headers.add(name: "Content-Type", value: type) }
                request.body = .bytes(ByteBuffer(data: body))
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                _ = try await response.body.collect(upTo: 1 << 20)
                return Int(response.status.code)
            }
            let utf16 = try #require(form.data(using: .utf16LittleEndian))
            let bom = Data([0xFF, 0xFE]) + utf16
            for (type, body) in [
                ("application/json", utf16), ("application/json", bom), ("", Data(form.utf8)),
                (nil, Data(form.utf8)), ("text/plain", Data(form.utf8)),
                ("application/json; charset=utf-16", Data(form.utf8)),
                ("application/json; charset=latin1", Data(form.utf8)),
                ("application/json", Data([0xEF, 0xBB, 0xBF]) + Data(form.utf8)),
                ("application/json", Data([0x7B, 0xC3, 0x28, 0x7D])),
            ] as [(String?, Data)] {
                #expect(try await status(type, body) == 415, "\(type ?? "no type") \(body.prefix(8).map { $0 })")
            }
            // Said as it is: decoded (and here refused for what it says: a weak or taken address).
            for type in ["application/json", "application/json; charset=utf-8", "Application/JSON; Charset=\"UTF-8\""] {
                #expect(try await status(type, Data(form.utf8)) != 415, "\(type)")
            }
        }
    }

    @Test("what the fuzzer found stays fixed: bad base64, unknown methods, long queries, untyped uploads")
    func fuzzerFindings() async throws {
        try await TestRelay.run { relay in
            let user = try await TestUser.make(relay, name: "contract")
            // A base64 field holding text that is not base64: 400, not 500.
            for path in ["/v1/sessions", "/v1/auth/sign-in", "/v1/accounts"] {
                let answer = try await Self.send(
                    relay, "POST", path, contentType: "application/json",
                    body:
                        #"{"email":"a@example.com","password":"long enough pw","identity":"é","avatar":"é","proof":{"challenge":"é","signature":"é"}}"#
                )
                #expect(answer.status == 400 && answer.body.contains("malformed_request"), "\(path): \(answer)")
            }
            // A method the path does not take: 405 with Allow, before the session or the body matter.
            let trace = try await Self.send(relay, "TRACE", "/v1/messages")
            #expect(trace.status == 405 && trace.allow == "POST", "\(trace)")
            let get = try await Self.send(relay, "GET", "/v1/sessions", contentType: "application/json", body: "{}")
            #expect(get.status == 405 && get.allow == "POST", "\(get)")
            #expect(try await Self.send(relay, "HEAD", "/v1/health").status == 200)
            // Bounded queries and URIs.
            let long = String(repeating: "a", count: 255)
            #expect(try await Self.send(relay, "GET", "/v1/users?query=\(long)", token: user.token).status == 400)
            let huge = String(repeating: "a", count: 5000)
            #expect(try await Self.send(relay, "GET", "/v1/users?query=\(huge)", token: user.token).status == 400)
            // Uploads say what they are.
            let untyped = try await Self.send(relay, "POST", "/v1/blobs", token: user.token, body: "bytes")
            #expect(untyped.status == 415, "\(untyped)")
            let typed = try await Self.send(
                relay, "POST", "/v1/blobs", token: user.token, contentType: "application/octet-stream", body: "")
            #expect(typed.status == 201, "an empty blob is a blob: \(typed)")
        }
    }
}
