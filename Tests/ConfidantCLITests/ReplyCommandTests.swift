import ConfidantTestSupport
import Foundation
import Testing

/// `confidant send --reply-to` as a user runs it, against a real `confidant serve`.
@Suite("send --reply-to end to end")
struct ReplyCommandTests {
    struct Line: Decodable {
        struct Reply: Decodable {
            let messageId: String
            let excerpt: String
            let gone: Bool
        }
        let id: String
        let text: String?
        let replyTo: Reply?
    }

    static func history(_ cli: CLIProcess, profile: String, with email: String) async throws -> [Line] {
        let result = try await cli.run(["chat", "history", "--profile", profile, email, "--json"])
        guard result.status == 0 else { throw CLIFailure(result.stderr) }
        return try JSONDecoder().decode([Line].self, from: result.stdout)
    }

    @Test("bob replies to alice's message; both histories quote it, and say so once it is deleted; bad ids are refused")
    func replyThroughTheCLI() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        #expect(try await cli.run(["send", "--profile", "alice", served.bob, "lunch at noon?"]).status == 0)
        let id = try #require(try await Self.history(cli, profile: "bob", with: served.alice).last?.id)

        let sent = try await cli.run(["send", "--profile", "bob", served.alice, "yes, at one", "--reply-to", id])
        #expect(sent.status == 0, "\(sent.stderr)")
        let received = try #require(try await Self.history(cli, profile: "alice", with: served.bob).last)
        #expect(received.text == "yes, at one")
        #expect(received.replyTo?.messageId == id && received.replyTo?.excerpt == "lunch at noon?")
        #expect(received.replyTo?.gone == false)
        let printed = try await cli.run(["chat", "history", "--profile", "alice", served.bob]).text
        #expect(printed.contains("↪ lunch at noon?") && printed.contains("yes, at one"), "\(printed)")

        #expect(try await cli.run(["chat", "delete", "--profile", "alice", id]).status == 0)
        #expect(try await Self.history(cli, profile: "bob", with: served.alice).last?.replyTo?.gone == true)
        let quoted = try await cli.run(["chat", "history", "--profile", "bob", served.alice]).text
        #expect(quoted.contains("lunch at noon? (deleted)"), "\(quoted)")

        let deleted = try await cli.run(["send", "--profile", "bob", served.alice, "again?", "--reply-to", id])
        #expect(deleted.status != 0 && deleted.stderr.contains("there is no message"), "\(deleted.stderr)")
        let notAnID = try await cli.run(["send", "--profile", "bob", served.alice, "hm", "--reply-to", "that one"])
        #expect(notAnID.status != 0 && notAnID.stderr.contains("--reply-to takes a message id"), "\(notAnID.stderr)")
    }
}
