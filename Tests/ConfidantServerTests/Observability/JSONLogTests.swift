import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import Logging
import OpenAPIRuntime
import Synchronization
import Testing

/// `serve --log-format json`: every line the relay writes is one JSON object with its fields,
/// and a sign-up, sign-in, message and sign-out leave no password or session token in them.
@Suite("JSON log lines")
struct JSONLogTests {
    @Test("each line is a JSON object with time, level, label, source, message and the metadata as fields")
    func lineShape() throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "confidant.test") {
            JSONLogHandler(label: $0) { line in lines.withLock { $0.append(line) } }
        }
        logger[metadataKey: "request-id"] = "R1"
        logger.warning("a \"quoted\" line\nwith a newline", metadata: ["count": "\(3)", "list": ["a", "b"]])
        let written = lines.withLock { $0 }
        #expect(written.count == 1 && written[0].hasSuffix("}\n") && written[0].filter { $0 == "\n" }.count == 1)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(written[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "warning" && object["label"] as? String == "confidant.test")
        #expect(object["message"] as? String == "a \"quoted\" line\nwith a newline")
        #expect(object["request-id"] as? String == "R1" && object["count"] as? String == "3")
        #expect(object["list"] as? [String] == ["a", "b"])
        let time = try #require(object["time"] as? String)
        #expect(try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(time) <= Date())
    }

    @Test(
        "a relay's lines at debug through sign-up, codes, a chat, an attachment and a backup: all JSON, no secret, a request id on each request's lines"
    )
    func noSecrets() async throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "confidant.relay") {
            JSONLogHandler(label: $0) { line in lines.withLock { $0.append(line) } }
        }
        logger.logLevel = .debug
        let secrets = Mutex<[String]>([])
        let requestLines = Mutex<(start: Int, end: Int)>((0, 0))
        try await TestRelay.run(logger: logger) { relay in
            requestLines.withLock { $0.start = lines.withLock(\.count) }
            let outbox = RawSignIn.outbox(relay)
            let codes: RawSignIn.Codes = { email in
                let code = try await outbox(email)
                secrets.withLock { $0.append(code) }
                return code
            }
            let alice = try await TestUser.make(relay, name: "alice", codes: codes)
            let bob = try await TestUser.make(relay, name: "bob", codes: codes)
            let batch = try alice.batch("hello", to: [(bob.address, bob.identity.publicIdentity)])
            _ = try await alice.client.sendMessage(body: .json(batch)).ok
            _ = try await bob.client.fetchMailbox().ok
            let attachment = [UInt8]("sealed attachment bytes \(UUID())".utf8)
            let receipt = try await alice.client.uploadBlob(body: .binary(HTTPBody(attachment))).created.body.json
            let grant = try await alice.client.grantBlob(
                path: .init(blobId: receipt.blobId), body: .json(.init(recipientUserId: bob.id.uuidString))
            ).created.body.json
            _ = try await bob.client.downloadBlob(
                path: .init(blobId: receipt.blobId), query: .init(capability: grant.capability)
            ).ok
            let backup = [UInt8]("sealed backup manifest \(UUID())".utf8)
            _ = try await alice.client.putBackupObject(path: .init(name: "manifest"), body: .binary(HTTPBody(backup)))
                .ok
            _ = try await alice.client.signOut().noContent
            requestLines.withLock { $0.end = lines.withLock(\.count) }
            let envelopes = batch.envelopes.map { Data($0.envelope.data) }
            secrets.withLock {
                $0 += [alice.password, bob.password, alice.token, bob.token, grant.capability]
                $0 += envelopes.map { $0.base64EncodedString() } + envelopes.map { $0.prefix(24).hexString }
                $0 += [attachment, backup].map { String(decoding: $0, as: UTF8.self) }
            }
        }
        let written = lines.withLock { $0 }
        let found = secrets.withLock { $0 }
        #expect(found.count > 10, "the codes were recorded: \(found.count)")
        #expect(written.count > 10, "the relay logged its start, migrations and the sign-ins: \(written.count)")
        for line in written {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)")
            for secret in found { #expect(!line.contains(secret), "a secret in \(line)") }
        }
        // What was logged while the requests ran belongs to one of them (Fluent's per-query lines
        // and its pool's come only at trace).
        let (start, end) = requestLines.withLock { $0 }
        #expect(end - start >= 2, "the two sign-in code notices at least: \(end - start) lines")
        for line in written[start..<end] {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["request-id"] is String, "no request id on \(line)")
        }
    }
}
