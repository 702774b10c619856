import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation

/// `confidant chat history EMAIL`.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history", abstract: "Show a conversation.")

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The peer's e-mail.") var email: String
    @Option(name: .long, help: "How many of the latest messages (1 or more).") var limit = 50
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1, got \(limit)") }
    }

    struct Line: Encodable {
        let id: String, direction: String, sentAt: Date, text: String?, unreadableReason: String?, status: String
        /// 2: received in a forward-secret session; 1: a one-shot v1 envelope.
        let envelope: Int?
        let attachments: [File]
        let edited: Bool, deleted: Bool
        let expiresAt: Date?
        let reactions: [Reaction]
        let replyTo: Reply?
    }

    struct Reply: Encodable {
        let messageId: String, excerpt: String
        /// The message is not on this device any more, or was deleted for everyone.
        let gone: Bool

        /// What `message` answers; nil for a message that answers none.
        init?(_ message: ChatMessage) {
            guard let reply = message.reply else { return nil }
            messageId = reply.messageID.canonicalString
            excerpt = reply.excerpt
            gone = message.replyTargetGone
        }
    }

    struct Reaction: Encodable {
        let emoji: String, userId: String, at: Date
    }

    struct File: Encodable {
        let id: String, index: Int, name: String, size: Int, contentType: String
    }

    func run() async throws {
        let messenger = try options.open()
        let problem = await syncQuietly(messenger)
        let contact = try await messenger.contact(email: email)
        let messages = try await messenger.history(with: contact.id, limit: limit)
        try await messenger.markRead(contact.id)
        // The read receipts go now, not with some later command.
        _ = try? await messenger.flushOutbox()
        if let problem { Terminal.printError(problem) }
        if output.json {
            return try JSONOutput.print(
                messages.map { message in
                    Line(
                        id: message.id.canonicalString, direction: "\(message.direction)", sentAt: message.sentAt,
                        text: message.text,
                        unreadableReason: message.unreadableReason, status: DeliveryStatusText.label(message.status),
                        envelope: message.envelopeVersion,
                        attachments: message.attachments.map {
                            File(
                                id: $0.id.canonicalString, index: $0.index, name: $0.name, size: $0.size,
                                contentType: $0.contentType)
                        }, edited: message.editedAt != nil, deleted: message.isDeleted, expiresAt: message.expiresAt,
                        reactions: message.reactions.map {
                            Reaction(emoji: $0.emoji, userId: $0.reactor.canonicalString, at: $0.at)
                        },
                        replyTo: Reply(message))
                })
        }
        for message in messages { print(TerminalStyle.line(message, peerName: contact.displayName)) }
    }
}
