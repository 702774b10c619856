import ConfidantTestSupport
import Foundation
import Testing

/// `confidant chat react` as a user runs it, against a real `confidant serve`.
@Suite("chat react end to end")
struct ReactCommandTests {
    struct Line: Decodable {
        struct Reaction: Decodable {
            let emoji: String
            let userId: String
        }
        let id: String
        let text: String?
        let reactions: [Reaction]
    }

    static func history(_ cli: CLIProcess, profile: String, with email: String) async throws -> [Line] {
        let result = try await cli.run(["chat", "history", "--profile", profile, email, "--json"])
        guard result.status == 0 else { throw CLIFailure(result.stderr) }
        return try JSONDecoder().decode([Line].self, from: result.stdout)
    }

    @Test("bob reacts to alice's message, changes it and takes it back; history shows it; bad input is refused")
    func reactThroughTheCLI() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        #expect(try await cli.run(["send", "--profile", "alice", served.bob, "lunch?"]).status == 0)
        let id = try #require(try await Self.history(cli, profile: "bob", with: served.alice).last?.id)

        let reacted = try await cli.run(["chat", "react", "--profile", "bob", id, "👍"])
        #expect(reacted.status == 0, "\(reacted.stderr)")
        #expect(reacted.text.contains("reacted 👍"))
        #expect(try await Self.history(cli, profile: "alice", with: served.bob).last?.reactions.map(\.emoji) == ["👍"])
        let printed = try await cli.run(["chat", "history", "--profile", "alice", served.bob]).text
        #expect(printed.contains("lunch? 👍 1"), "\(printed)")

        #expect(try await cli.run(["chat", "react", "--profile", "bob", id, "❤️"]).status == 0)
        #expect(try await Self.history(cli, profile: "alice", with: served.bob).last?.reactions.map(\.emoji) == ["❤️"])
        let removed = try await cli.run(["chat", "react", "--profile", "bob", id, "--remove"])
        #expect(removed.status == 0 && removed.text.contains("reaction removed"), "\(removed.stderr)")
        #expect(try await Self.history(cli, profile: "alice", with: served.bob).last?.reactions.isEmpty == true)

        let word = try await cli.run(["chat", "react", "--profile", "bob", id, "nice"])
        #expect(word.status != 0 && word.stderr.contains("is not one emoji"), "\(word.stderr)")
        let both = try await cli.run(["chat", "react", "--profile", "bob", id, "👍", "--remove"])
        #expect(both.status != 0 && both.stderr.contains("not both"), "\(both.stderr)")
        let unknown = try await cli.run(["chat", "react", "--profile", "bob", UUID().uuidString, "👍"])
        #expect(unknown.status != 0 && unknown.stderr.contains("there is no message"), "\(unknown.stderr)")
        let notAnID = try await cli.run(["chat", "react", "--profile", "bob", "yesterday", "👍"])
        #expect(notAnID.status != 0 && notAnID.stderr.contains("is not a message id"), "\(notAnID.stderr)")
    }
}
