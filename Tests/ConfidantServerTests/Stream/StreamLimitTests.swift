import ConfidantTestSupport
import Foundation
import Testing

/// Misbehaving clients on raw sockets (`Tests/Interop/stream_abuse.py`): the relay bounds what one
/// connection can make it hold, and closes connections that went silent.
@Suite("Stream and connection limits")
struct StreamLimitTests {
    @Test("a message that never ends is cut off at the frame limit with 1009, and the server goes on")
    func unboundedMessage() async throws {
        try await TestRelay.run(adjust: { $0.maximumJSONBodyBytes = 1 << 20 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let result = try await PythonScript.run(
                "stream_abuse.py", ["huge-message", "\(relay.port)", alice.streamCredentials, "64"])
            #expect(result.hasPrefix("closed 1009"), "\(result)")
            // Cut off near the limit, not after the client's 64 MiB.
            let sent = Int(result.split(separator: " ")[3]) ?? .max
            #expect(sent < 16, "\(result)")
            _ = try await alice.client.currentAccount().ok
        }
    }

    @Test("a client that sends and never reads its answers is closed instead of queued for")
    func clientThatDoesNotRead() async throws {
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let result = try await PythonScript.run(
                "stream_abuse.py", ["no-read", "\(relay.port)", alice.streamCredentials, "60000"])
            // 1008 as documented; or, when the relay closed while the client was still sending
            // into a full socket, the kernel's reset in place of that close frame.
            #expect(result.hasPrefix("closed 1008") || result.hasPrefix("closed reset"), "\(result)")
            _ = try await alice.client.currentAccount().ok
        }
    }

    @Test("a stream that never answers a ping is closed")
    func silentStream() async throws {
        try await TestRelay.run(adjust: { $0.streamPingSeconds = 1 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let result = try await PythonScript.run(
                "stream_abuse.py", ["no-pong", "\(relay.port)", alice.streamCredentials, "30"])
            #expect(result.hasPrefix("closed"), "\(result)")
            #expect(
                !result.hasPrefix("closed 4403") && !result.hasPrefix("closed 4408"),
                "closed for the ping, not for a missing device proof")
        }
    }

    @Test("an HTTP connection that sends nothing is closed after the idle timeout")
    func silentConnection() async throws {
        try await TestRelay.run(adjust: { $0.idleTimeoutSeconds = 1 }) { relay in
            let result = try await PythonScript.run("stream_abuse.py", ["silent", "\(relay.port)", "30"])
            #expect(result.hasPrefix("closed"), "\(result)")
        }
    }

    @Test("a WebSocket handshake with a version the relay does not speak is answered 426 with 13; a bad key 400")
    func handshakeIsChecked() async throws {
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            func answer(key: String, version: String) async throws -> String {
                try await PythonScript.run(
                    "stream_abuse.py", ["upgrade", "\(relay.port)", alice.streamCredentials, key, version])
            }
            let good = "dGhlIHNhbXBsZSBub25jZQ=="  // RFC 6455's sample key: 16 bytes
            #expect(try await answer(key: good, version: "13").hasPrefix("HTTP/1.1 101"))
            #expect(try await answer(key: good, version: "8") == "HTTP/1.1 426 Upgrade Required 13")
            #expect(try await answer(key: good, version: "-") == "HTTP/1.1 426 Upgrade Required 13")
            for key in ["!!", "-", "dGhlIHNhbXBsZQ==", good + "AAAA"] {
                #expect(try await answer(key: key, version: "13").hasPrefix("HTTP/1.1 400"), "\(key)")
            }
        }
    }
}
