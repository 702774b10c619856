import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import OpenAPIRuntime
import Testing

@Suite("Relay stream, protection and storage")
struct RelayStreamTests {
    @Test(
        "the stream replays what is unacknowledged, pushes new entries, and resumes after a cursor",
        arguments: TestDatabaseKind.allCases)
    func stream(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            for index in 0..<3 {
                _ = try await alice.send("stored \(index)", to: [(bob.address, bob.identity.publicIdentity)])
            }
            let stream = try await StreamClient.connect(port: relay.port, user: bob)
            let replay = await stream.frames.next(4)
            #expect(replay.compactMap(\.entry).count == 3)
            #expect(replay.last?.caughtUp == true)
            for index in 0..<20 {
                _ = try await alice.send("live \(index)", to: [(bob.address, bob.identity.publicIdentity)])
            }
            let live = await stream.frames.next(20).compactMap(\.entry)
            #expect(live.count == 20)
            let cursors = (replay.compactMap(\.entry) + live).map(\.cursor)
            #expect(cursors == cursors.sorted())
            let texts = try live.map { entry in
                let envelope = try SealedEnvelope(serialized: try #require(entry.envelope).data)
                return String(
                    decoding: try envelope.open(
                        as: bob.identity, recipientUserID: bob.id, from: alice.identity.publicIdentity), as: UTF8.self)
            }
            #expect(texts == (0..<20).map { "live \($0)" })
            // Acknowledge the first 13; the other 10 come again on reconnect.
            try await stream.acknowledge(Array(cursors.prefix(13)))
            await stream.close()
            // Acknowledgements are not answered: wait until the relay has let go of the 13.
            let waiting = try await RelayStreamSendTests.eventually {
                try await bob.client.fetchMailbox(query: .init(after: 0, limit: 100)).ok.body.json.entries.count
            } until: {
                $0 == cursors.count - 13
            }
            #expect(waiting == cursors.count - 13)
            let again = try await StreamClient.connect(port: relay.port, user: bob)
            let replayed = await again.frames.next(11).compactMap(\.entry).map(\.cursor)
            #expect(replayed == Array(cursors.suffix(10)))
            await again.close()
            // Resume after a cursor skips what came before it.
            let resumed = try await StreamClient.connect(port: relay.port, user: bob, after: cursors[20])
            #expect(await resumed.frames.next(3).compactMap(\.entry).map(\.cursor) == Array(cursors.suffix(2)))
            await resumed.close()
        }
    }

    @Test("bad tokens, every endpoint without a session, malformed JSON and oversized bodies")
    func protection() async throws {
        try await TestRelay.run(adjust: { $0.maximumJSONBodyBytes = 64 * 1024 }) { relay in
            let base = "http://127.0.0.1:\(relay.port)/v1"
            let id = UUID().uuidString
            let endpoints: [(HTTPMethod, String)] = [
                (.DELETE, "/sessions/current"), (.GET, "/account"), (.PATCH, "/account"), (.POST, "/account/deletion"),
                (.PUT, "/account/avatar"),
                (.GET, "/users"), (.GET, "/users/\(id)"), (.GET, "/users/\(id)/avatar"),
                (.GET, "/users/\(id)/key-history"),
                (.DELETE, "/devices/\(id)"), (.POST, "/messages"), (.GET, "/mailbox"),
                (.POST, "/mailbox/acknowledgements"),
                (.GET, "/conversations"), (.POST, "/blobs"), (.GET, "/blobs/\(id)"), (.DELETE, "/blobs/\(id)"),
                (.POST, "/blobs/\(id)/grants"), (.GET, "/stream"),
            ]
            for (method, path) in endpoints {
                for token in [nil, "Bearer not-a-real-token-at-all-xxxxxxxxxxxxxxxxxxx", "Basic abc"] {
                    let (status, problem) = try await Self.raw(
                        method, base + path, token: token, body: method == .GET ? nil : "{}",
                        contentType: path.hasSuffix("avatar") ? "image/png" : "application/json")
                    #expect(
                        status == 401 && problem == "unauthenticated", "\(method) \(path) → \(status) \(problem ?? "")")
                }
            }
            let alice = try await TestUser.make(relay, name: "alice")
            let (malformedStatus, malformed) = try await Self.raw(
                .POST, base + "/messages", token: "Bearer \(alice.token)", body: "{\"messageId\": 5,")
            #expect(malformedStatus == 400 && malformed == "malformed_request")
            let big =
                "{\"messageId\": \"\(UUID())\", \"envelopes\": [], \"pad\": \"" + String(repeating: "a", count: 70_000)
                + "\"}"
            let (bigStatus, tooLarge) = try await Self.raw(
                .POST, base + "/messages", token: "Bearer \(alice.token)", body: big)
            #expect(bigStatus == 413 && tooLarge == "too_large")
            let (missingStatus, missing) = try await Self.raw(
                .GET, "http://127.0.0.1:\(relay.port)/no-such-thing", token: nil, body: nil)
            #expect(missingStatus == 404 && missing == "not_found")
            let (docStatus, _) = try await Self.raw(
                .GET, "http://127.0.0.1:\(relay.port)/openapi.yaml", token: nil, body: nil)
            #expect(docStatus == 200)
        }
    }

    @Test(
        "a copy of the server's files holds no message text, password or token", arguments: TestDatabaseKind.allCases)
    func noPlaintextAtRest(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let canary = "CANARY-\(UUID().uuidString)-meet me at the old mill"
            for _ in 0..<5 { _ = try await alice.send(canary, to: [(bob.address, bob.identity.publicIdentity)]) }
            let attachment = try SealedEnvelope.seal(
                Data(canary.utf8), from: alice.identity, senderUserID: alice.id,
                to: bob.identity.publicIdentity, recipientUserID: bob.id)
            _ = try await alice.client.uploadBlob(body: .binary(HTTPBody(attachment.serialized))).created
            var needles = [canary, alice.password, bob.token, alice.token].map { Data($0.utf8) }
            needles.append(Data(canary.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
            // pg_dump writes bytea as hex.
            needles.append(Data(Data(canary.utf8).map { String(format: "%02x", $0) }.joined().utf8))
            var haystack = Data()
            if case .sqlite = relay.database {
                let files = try FileManager.default.subpathsOfDirectory(atPath: relay.directory.path)
                for file in files {
                    let url = relay.directory.appendingPathComponent(file)
                    var isDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory),
                        !isDirectory.boolValue
                    {
                        haystack += try Data(contentsOf: url)
                    }
                }
                #expect(haystack.count > 10_000)
            } else if let name = relay.postgresName {
                haystack = try await PostgresDump.dump(database: name)
                #expect(haystack.count > 1_000)
            }
            for needle in needles { #expect(haystack.range(of: needle) == nil) }
        }
    }

    /// One request without the generated client: `(status, error code)`.
    static func raw(
        _ method: HTTPMethod, _ url: String, token: String?, body: String?, contentType: String = "application/json"
    ) async throws -> (Int, String?) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: token) }
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(string: body))
        }
        // The shared client queues requests beyond its connections per host, and the deadline runs
        // while one waits: on a loaded CI machine 10 s ran out (deadlineExceeded, the run of
        // b80d33b). The answers are what is tested here; only a hang should fail.
        let response = try await HTTPClient.shared.execute(request, timeout: .minutes(2))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        struct Problem: Decodable {
            let error: String
            let message: String
        }
        let problem = try? JSONDecoder().decode(Problem.self, from: Data(buffer: bytes))
        return (Int(response.status.code), problem?.error)
    }
}

/// `pg_dump` of a test database, through the cluster Tests/run.sh started.
enum PostgresDump {
    static func dump(database: String) async throws -> Data {
        guard let url = TestDatabaseKind.postgresURL, let components = URLComponents(string: url) else { return Data() }
        return try await ChildProcess.run(
            command: "pg_dump",
            [
                "-h", components.host ?? "127.0.0.1", "-p", String(components.port ?? 5432),
                "-U", components.user ?? "postgres", "--data-only", database,
            ]
        ).stdout
    }
}
