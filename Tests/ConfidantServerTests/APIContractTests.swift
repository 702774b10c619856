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
}
