import ConfidantServer
import ConfidantTestSupport
import Foundation
import Logging
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

    @Test("a relay's lines at debug through sign-up, sign-in, a message and sign-out: all JSON, no password or token")
    func noSecrets() async throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "confidant.relay") {
            JSONLogHandler(label: $0) { line in lines.withLock { $0.append(line) } }
        }
        logger.logLevel = .debug
        var secrets: [String] = []
        try await TestRelay.run(logger: logger) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            _ = try await alice.send("hello", to: [(bob.address, bob.identity.publicIdentity)])
            _ = try await bob.client.fetchMailbox().ok
            _ = try await alice.client.signOut().noContent
            secrets = [alice.password, bob.password, alice.token, bob.token]
        }
        let written = lines.withLock { $0 }
        #expect(written.count > 10, "the relay logged its start, migrations and the sign-ins: \(written.count)")
        for line in written {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "\(line)")
            for secret in secrets { #expect(!line.contains(secret), "a secret in \(line)") }
        }
    }
}
