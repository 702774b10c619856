import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation

/// `confidant chat search QUERY [--with EMAIL]`.
struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search", abstract: "Search this device's messages and file names.",
        discussion: """
            Every word of the query must be in a message, or begin a word of it ("meet" finds "meeting"; a word \
            of one or two letters is found whole); case and accents do not count. Only this device's messages, \
            through an index of keyed hashes kept beside them (docs/SECURITY.md). The most recently stored first; the id goes to \
            `chat react`, `send --reply-to` and the others.
            """)

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The words to find.") var query: String
    @Option(name: .long, help: "Only the conversation with this e-mail.") var with: String?
    @Option(name: .long, help: "How many results at most (1 to 500).") var limit = 20
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard (1...500).contains(limit) else { throw ValidationError("--limit must be 1 to 500, got \(limit)") }
        guard !SearchTerms.words(query).isEmpty else {
            throw ValidationError("the query has no word to look for (letters or digits)")
        }
    }

    struct Hit: Encodable {
        let id: String, conversation: String, conversationName: String, direction: String, sentAt: Date,
            excerpt: String
    }

    func run() async throws {
        let messenger = try options.open()
        var conversation: UUID?
        if let with { conversation = try await messenger.contact(email: with).id }
        let backlog = try await messenger.searchBacklog()
        if backlog > 0 {
            Terminal.printError("indexing \(backlog) earlier messages for search (once)…")
            try await messenger.indexEarlierMessagesForSearch()
        }
        let hits = try await messenger.search(query, in: conversation, limit: limit)
        var names: [UUID: String] = [:]
        for peer in Set(hits.map { $0.message.peer }) {
            names[peer] =
                if let contact = try await messenger.knownContact(peer) {
                    contact.displayName
                } else {
                    (try? await messenger.group(peer))?.state.name ?? "a conversation"
                }
        }
        if output.json {
            return try JSONOutput.print(
                hits.map {
                    Hit(
                        id: $0.message.id.canonicalString, conversation: $0.message.peer.canonicalString,
                        conversationName: names[$0.message.peer] ?? "", direction: "\($0.message.direction)",
                        sentAt: $0.message.sentAt, excerpt: $0.excerpt)
                })
        }
        if hits.isEmpty { return print("nothing found for \(TerminalText.printable(query, keepingNewlines: false))") }
        for hit in hits {
            let name = TerminalText.printable(names[hit.message.peer] ?? "", keepingNewlines: false)
            let who = hit.message.direction == .outgoing ? "you → \(name)" : name
            print(
                TerminalStyle.dim("[\(Self.format(hit.message.sentAt))]") + " " + TerminalStyle.accent(who) + ": "
                    + TerminalText.printable(hit.excerpt, keepingNewlines: false) + "  "
                    + TerminalStyle.dim(hit.message.id.canonicalString))
        }
    }

    private static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }
}
