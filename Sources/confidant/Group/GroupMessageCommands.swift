import ArgumentParser
import ConfidantKit
import Foundation

/// `confidant group send GROUP TEXT`.
struct GroupSendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Send a message to every member of a group.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget
    @Argument(help: "The message.") var text: String
    @Option(
        name: .customLong("reply-to"), help: "Answer this message of the group (its id from `group history --json`).")
    var replyTo: String?

    func validate() throws {
        if let replyTo, UUID(uuidString: replyTo) == nil {
            throw ValidationError("\(replyTo) is not a message id")
        }
    }

    func run() async throws {
        let (messenger, group) = try await target.open(options)
        let message = try await messenger.sendToGroup(
            group.groupID, text: text, replyingTo: replyTo.flatMap(UUID.init(uuidString:)))
        let name = TerminalText.printable(group.name, keepingNewlines: false)
        print(message.status == .pending ? "queued for \(name): the server cannot take it now" : "sent to \(name)")
    }
}

/// `confidant group history GROUP`.
struct GroupHistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "Show a group's conversation, each message with its author.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget
    @Option(name: .long, help: "How many of the latest messages (1 or more).") var limit = 50
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1, got \(limit)") }
    }

    struct Line: Encodable {
        let id: String, direction: String, author: String?, sentAt: Date, text: String?, unreadableReason: String?
        let status: String
        /// Own messages: how many members have it and have read it.
        let receipts: GroupReceipts?
        let replyTo: HistoryCommand.Reply?
    }

    func run() async throws {
        let messenger = try options.open()
        let problem = await syncQuietly(messenger)
        let group = try await target.resolve(in: messenger)
        let messages = try await messenger.groupHistory(group.groupID, limit: limit)
        try await messenger.markRead(group.groupID)
        if let problem { Terminal.printError(problem) }
        if output.json {
            return try JSONOutput.print(
                messages.map {
                    Line(
                        id: $0.id.canonicalString, direction: "\($0.direction)", author: $0.author?.canonicalString,
                        sentAt: $0.sentAt, text: $0.text, unreadableReason: $0.unreadableReason,
                        status: DeliveryStatusText.label($0.status), receipts: $0.groupReceipts,
                        replyTo: HistoryCommand.Reply($0))
                })
        }
        let names = await memberNames(Array(Set(messages.compactMap(\.author))), in: messenger)
        for message in messages {
            let author = message.author.map { names[$0] ?? $0.canonicalString } ?? ""
            let receipts = message.groupReceipts.map { TerminalStyle.dim(" · \($0.summary)") } ?? ""
            print(TerminalStyle.line(message, peerName: author) + receipts)
        }
    }
}
