import ConfidantTestSupport
import Foundation
import Testing

/// Schemathesis (PyPI, in the test command's virtual environment) generates requests from the
/// served `openapi.yaml`, signed in as a real user, and checks every answer against the document:
/// no server error, no status or body the document does not declare.
@Suite("OpenAPI fuzzing")
struct SchemathesisTests {
    /// Every operation but the deletions; the deletions; signing out — each with a user of its own
    /// (signing out ends the token, which would leave the rest of a run unauthenticated).
    @Test(
        "schemathesis against the served document, signed in: no server error, no schema violation",
        arguments: [
            // The later `--max-time` wins: the two small runs get 30 s of the 90.
            ["--exclude-method", "DELETE"],
            ["--include-method", "DELETE", "--exclude-operation-id", "signOut", "--max-time", "30"],
            ["--include-operation-id", "signOut", "--max-time", "30"],
        ])
    func fuzzTheDocument(methods: [String]) async throws {
        let config = Repository.file("Tests/Interop/schemathesis.toml")
        try await TestRelay.run { relay in
            let user = try await TestUser.make(relay, name: "fuzzer")
            // The served document, fetched here with a patient timeout: schemathesis gives a
            // schema 10 s to load, which a relay sharing a saturated machine once missed.
            let document = FileManager.default.temporaryDirectory.appendingPathComponent(
                "openapi-\(UUID().uuidString).yaml")
            defer { try? FileManager.default.removeItem(at: document) }
            let fetched = try await ChildProcess.run(
                command: "python3",
                [
                    "-c",
                    "import sys, urllib.request; open(sys.argv[2], 'wb').write(urllib.request.urlopen(sys.argv[1], timeout=120).read())",
                    "\(relay.baseURL.absoluteString)/openapi.yaml", document.path,
                ], mergingStandardError: true)
            try #require(fetched.status == 0, "\(fetched.text)")
            let output = try await ChildProcess.run(
                command: "st",
                [
                    "--config-file", config.path, "run", document.path, "--url",
                    "\(relay.baseURL.absoluteString)/v1",
                    "--header", "Authorization: Bearer \(user.token)",
                    "--max-examples", ProcessInfo.processInfo.environment["CONFIDANT_FUZZ_EXAMPLES"] ?? "25",
                    "--seed", "2026", "--workers", "1", "--request-timeout", "30", "--max-time", "90",
                    "--generation-deterministic",
                ] + methods, mergingStandardError: true)
            if let path = ProcessInfo.processInfo.environment["CONFIDANT_FUZZ_OUTPUT"] {
                let suffix = methods.first == "--exclude-method" ? "" : "." + methods[1]
                try output.stdout.write(to: URL(fileURLWithPath: path + suffix))
            }
            #expect(output.status == 0, "\(output.text.suffix(8000))")
        }
    }
}
