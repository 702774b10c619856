import Foundation
import Testing

/// `confidant group …` end to end against a served relay: two profiles, the changes each makes
/// reaching the other, an admin's rights, and names the format refuses.
@Suite("Group commands")
struct GroupCommandTests {
    @Test(
        "alice makes a group with bob, who sees it; bob may not remove her or set the timer; promoted, he renames it; he leaves and she is alone"
    )
    func groupLifecycle() async throws {
        let cli = try CLIProcess()
        defer { cli.remove() }
        let served = try await ChatCommandTests.ServedChat(cli)
        defer { served.stop() }
        let escaping = try await cli.run([
            "group", "create", "--profile", "alice", "Band\u{1B}[31m", "--member", served.bob,
        ])
        #expect(escaping.status != 0 && escaping.stderr.contains("without control characters"), "\(escaping.stderr)")
        let made = try await cli.run(["group", "create", "--profile", "alice", "Band", "--member", served.bob])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.text.contains("you  admin") && made.text.contains(served.bob), "\(made.text)")

        let listed = try await cli.run(["group", "list", "--profile", "bob", "--json"])
        let rows = try JSONDecoder().decode([GroupRow].self, from: listed.stdout)
        #expect(rows.count == 1 && rows.first?.members == 2 && rows.first?.admin == false, "\(listed.stderr)")
        let refused = try await cli.run(["group", "remove", "--profile", "bob", "band", served.alice])
        #expect(refused.status != 0 && refused.stderr.contains("only the group's admins"), "\(refused.stderr)")
        let unknown = try await cli.run(["group", "info", "--profile", "bob", "choir"])
        #expect(unknown.status != 0 && unknown.stderr.contains("knows no group \"choir\""), "\(unknown.stderr)")

        let timer = try await cli.run(["group", "timer", "--profile", "alice", "band", "1h"])
        #expect(timer.status == 0 && timer.text.contains("disappearing messages in Band: 1 h"), "\(timer.stderr)")
        let notAdmin = try await cli.run(["group", "timer", "--profile", "bob", "band", "off"])
        #expect(notAdmin.status != 0 && notAdmin.stderr.contains("only the group's admins"), "\(notAdmin.stderr)")
        let sent = try await cli.run(["group", "send", "--profile", "alice", "band", "rehearsal at 8"])
        #expect(sent.status == 0 && sent.text.contains("sent to Band"), "\(sent.stderr)")
        let heard = try await cli.run(["group", "history", "--profile", "bob", "band"])
        #expect(heard.text.contains("Alice") && heard.text.contains("rehearsal at 8"), "\(heard.text)")
        #expect(heard.text.contains("⏱"), "the group's timer runs on Bob's copy: \(heard.text)")
        // Bob's device sent its delivery receipt when it synced: Alice's line counts him.
        let own = try await cli.run(["group", "history", "--profile", "alice", "band"])
        #expect(
            own.text.contains("rehearsal at 8") && own.text.contains(" of 1") && !own.text.contains("sent to 1"),
            "\(own.text)")
        // Bob answers it; the quote is in everyone's history (and its --json).
        let lines = try await cli.run(["group", "history", "--profile", "bob", "band", "--json"])
        let said = try #require(
            try JSONDecoder().decode([GroupLine].self, from: lines.stdout).first { $0.text == "rehearsal at 8" })
        let answered = try await cli.run(
            ["group", "send", "--profile", "bob", "band", "I'll bring the drums", "--reply-to", said.id])
        #expect(answered.status == 0, "\(answered.stderr)")
        let quoted = try await cli.run(["group", "history", "--profile", "alice", "band", "--json"])
        let reply = try JSONDecoder().decode([GroupLine].self, from: quoted.stdout).first {
            $0.text == "I'll bring the drums"
        }
        #expect(reply?.replyTo?.messageId == said.id && reply?.replyTo?.excerpt == "rehearsal at 8")
        let printed = try await cli.run(["group", "history", "--profile", "alice", "band"])
        #expect(printed.text.contains("↪ rehearsal at 8"), "\(printed.text)")
        let badReply = try await cli.run(["group", "send", "--profile", "bob", "band", "hm", "--reply-to", "soon"])
        #expect(badReply.status != 0 && badReply.stderr.contains("is not a message id"), "\(badReply.stderr)")
        #expect(try await cli.run(["group", "admin", "--profile", "alice", "band", served.bob]).status == 0)
        let renamed = try await cli.run(["group", "rename", "--profile", "bob", "band", "Choir"])
        #expect(renamed.status == 0 && renamed.text.contains("Choir"), "\(renamed.stderr)")
        #expect(try await cli.run(["group", "leave", "--profile", "bob", "choir"]).status == 0)
        let info = try await cli.run(["group", "info", "--profile", "alice", "choir"])
        #expect(info.status == 0, "\(info.stderr)")
        #expect(info.text.contains("Choir") && info.text.contains("version 5") && !info.text.contains(served.bob))
        let bobs = try await cli.run(["group", "list", "--profile", "bob"])
        #expect(bobs.text.contains("(not a member)"), "\(bobs.text)")
        let late = try await cli.run(["group", "send", "--profile", "bob", "choir", "can I come back?"])
        #expect(late.status != 0 && late.stderr.contains("you are not a member of Choir"), "\(late.stderr)")
    }
}

/// One line of `group list --json`.
private struct GroupRow: Decodable {
    let id: String
    let name: String
    let members: Int
    let admin: Bool
    let member: Bool
}

/// One line of `group history --json`.
private struct GroupLine: Decodable {
    struct Reply: Decodable {
        let messageId: String
        let excerpt: String
    }
    let id: String
    let text: String?
    let replyTo: Reply?
}
