import ArgumentParser
import ConfidantKit
import Foundation

/// `confidant chat mark-unread EMAIL`.
struct MarkUnreadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mark-unread", abstract: "Mark a conversation unread, to come back to it.",
        discussion: """
            The conversation counts as unread in `inbox` (and the app) until it is opened again \
            (`chat history`, `chat EMAIL`, or the app). Only on this device: the other side is not told, and \
            read receipts already sent stay sent.
            """)

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The peer's e-mail.") var email: String

    func run() async throws {
        let messenger = try options.open()
        let contact = try await messenger.contact(email: email)
        try await messenger.markUnread(contact.id)
        print("marked unread: \(TerminalText.printable(contact.displayName, keepingNewlines: false))")
    }
}
