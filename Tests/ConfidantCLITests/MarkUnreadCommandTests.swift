import ConfidantTestSupport
import Foundation
import Testing

/// `confidant chat mark-unread` as a user runs it, against a real `confidant serve`.
@Suite("chat mark-unread end to end")
struct MarkUnreadCommandTests {
    struct Row: Decodable {
        let email: String
        let unread: Int
        let markedUnread: Bool
    }

    static func inbox(_ cli: CLIProcess, profile: String) async throws -> [Row] {
        let result = try await cli.run(["chat", "inbox", "--profile", profile, "--json"])
        guard result.status == 0 else { throw CLIFailure(result.stderr) }
        return try JSONDecoder().decode([Row].self, from: result.stdout)
    }

    @Test("a read conversation marked unread counts one in inbox until its history is read; an unknown peer is refused")
    func markUnreadThroughTheCLI() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        #expect(try await cli.run(["send", "--profile", "alice", served.bob, "call me"]).status == 0)
        #expect(try await cli.run(["chat", "history", "--profile", "bob", served.alice]).status == 0)
        let row = { try await Self.inbox(cli, profile: "bob").first { $0.email == served.alice } }
        #expect(try await row()?.unread == 0)

        let marked = try await cli.run(["chat", "mark-unread", "--profile", "bob", served.alice])
        #expect(marked.status == 0 && marked.text.contains("marked unread"), "\(marked.stderr)")
        #expect(try await row()?.unread == 1)
        #expect(try await row()?.markedUnread == true)
        let table = try await cli.run(["chat", "inbox", "--profile", "bob"]).text
        #expect(table.contains("call me"), "\(table)")

        #expect(try await cli.run(["chat", "history", "--profile", "bob", served.alice]).status == 0)
        #expect(try await row()?.unread == 0)
        #expect(try await row()?.markedUnread == false)

        let nobody = try await cli.run(["chat", "mark-unread", "--profile", "bob", "nobody@example.com"])
        #expect(nobody.status != 0 && nobody.stderr.contains("nobody@example.com"), "\(nobody.stderr)")
    }
}
