import ConfidantTestSupport
import Foundation
import Testing

/// `confidant chat search` as a user runs it, against a real `confidant serve`.
@Suite("chat search end to end")
struct SearchCommandTests {
    struct Hit: Decodable {
        let id: String
        let conversationName: String
        let direction: String
        let excerpt: String
    }

    static func search(_ cli: CLIProcess, _ arguments: [String]) async throws -> [Hit] {
        let result = try await cli.run(["chat", "search", "--profile", "bob"] + arguments + ["--json"])
        guard result.status == 0 else { throw CLIFailure(result.stderr) }
        return try JSONDecoder().decode([Hit].self, from: result.stdout)
    }

    @Test(
        "bob finds received and sent messages by a word or a word's start, in one chat or all; the profile holds no searched word; bad queries are refused"
    )
    func searchThroughTheCLI() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        #expect(
            try await cli.run(["send", "--profile", "alice", served.bob, "the quarterly budget review"]).status == 0)
        #expect(try await cli.run(["send", "--profile", "bob", served.alice, "Budgeting is hard"]).status == 0)
        #expect(try await cli.run(["send", "--profile", "alice", served.bob, "unrelated"]).status == 0)
        #expect(try await cli.run(["chat", "history", "--profile", "bob", served.alice]).status == 0)

        let budget = try await Self.search(cli, ["BUDGET"])
        // Newest stored first: bob's send stored his own line before he fetched alice's.
        #expect(
            Set(budget.map { "\($0.direction): \($0.excerpt)" }) == [
                "outgoing: Budgeting is hard", "incoming: the quarterly budget review",
            ])
        #expect(budget.allSatisfy { $0.conversationName == "Alice" })
        #expect(try await Self.search(cli, ["quarterly budget", "--with", served.alice]).count == 1)
        #expect(try await Self.search(cli, ["budget", "--limit", "1"]).count == 1)
        #expect(try await Self.search(cli, ["walrus"]).isEmpty)
        let printed = try await cli.run(["chat", "search", "--profile", "bob", "quarterly"])
        #expect(printed.status == 0 && printed.text.contains("Alice: the quarterly budget review"), "\(printed.text)")

        // The index is keyed hashes: no searched word is in bob's profile, however it is stored.
        let profile = cli.directory.appendingPathComponent("home/bob")
        var bytes = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: profile.path) {
            var isDirectory: ObjCBool = false
            let path = profile.appendingPathComponent(name).path
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                bytes += try Data(contentsOf: URL(fileURLWithPath: path))
            }
        }
        #expect(bytes.count > 4096)
        for word in ["quarterly", "budget", "Budget"] {
            #expect(bytes.range(of: Data(word.utf8)) == nil, "\(word) is in bob's profile")
        }

        let noWord = try await cli.run(["chat", "search", "--profile", "bob", "?!"])
        #expect(noWord.status != 0 && noWord.stderr.contains("no word"), "\(noWord.stderr)")
        let zero = try await cli.run(["chat", "search", "--profile", "bob", "budget", "--limit", "0"])
        #expect(zero.status != 0 && zero.stderr.contains("--limit"), "\(zero.stderr)")
        let nobody = try await cli.run(["chat", "search", "--profile", "bob", "budget", "--with", "nobody@example.com"])
        #expect(nobody.status != 0 && nobody.stderr.contains("nobody@example.com"), "\(nobody.stderr)")
    }
}
