import ConfidantTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Envelope v2 sessions between two real client processes through a real `confidant serve`.
@Suite("Sessions between client processes")
struct SessionCommandTests {
    @Test("Bob offline for 500 messages: all arrive in order in one session; replies ratchet both ways")
    func offlineFor500() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        let (alice, bob) = (served.alice, served.bob)

        // Bob's client is not running while Alice sends 500 messages (one process, one session start).
        let texts = (0..<500).map { "offline message \($0) — Ünïcødé ✓" }
        let sent = try await cli.run(
            ["send", "--profile", "alice", bob, "--each-line"], stdin: Data(texts.joined(separator: "\n").utf8))
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(String(decoding: sent.stdout, as: UTF8.self).contains("sent 500 messages"))

        // Bob comes back: everything, in order, from a v2 session.
        let received = try await ChatCommandTests.history(cli, profile: "bob", with: alice).filter {
            $0.direction == "incoming"
        }
        #expect(received.count == 500)
        #expect(received.map(\.text) == texts)
        #expect(received.allSatisfy { $0.envelope == 2 && $0.unreadableReason == nil })

        // Replies go the other way and back again: each turn is a DH ratchet step.
        for round in 0..<3 {
            let reply = try await cli.run(["send", "--profile", "bob", alice, "reply \(round) from Bob"])
            #expect(reply.status == 0, "\(reply.stderr)")
            let answer = try await cli.run(["send", "--profile", "alice", bob, "answer \(round) from Alice"])
            #expect(answer.status == 0, "\(answer.stderr)")
        }
        let aliceSees = try await ChatCommandTests.history(cli, profile: "alice", with: bob).filter {
            $0.direction == "incoming"
        }
        #expect(aliceSees.map(\.text) == (0..<3).map { "reply \($0) from Bob" })
        #expect(aliceSees.allSatisfy { $0.envelope == 2 })
        let bobSees = try await ChatCommandTests.history(cli, profile: "bob", with: alice).filter {
            $0.direction == "incoming"
        }
        #expect(bobSees.suffix(3).map(\.text) == (0..<3).map { "answer \($0) from Alice" })
        #expect(bobSees.allSatisfy { $0.envelope == 2 })
    }
}
