import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation

/// `confidant chat react MESSAGE_ID EMOJI` and `--remove`.
struct ReactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "react", abstract: "React to a message with one emoji, or take your reaction back.",
        discussion: """
            One reaction per person per message: a new one replaces yours. The message id is in \
            `confidant chat history EMAIL --json`; the other side and your other devices see the reaction \
            beside the message.
            """)

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The message's id (from `chat history --json`).") var messageID: String
    @Argument(help: "One emoji, e.g. 👍 ❤️ 😂 (none with --remove).") var emoji: String?
    @Flag(name: .long, help: "Take your reaction back.") var remove = false

    func validate() throws {
        guard UUID(uuidString: messageID) != nil else { throw ValidationError("\(messageID) is not a message id") }
        if remove, emoji != nil { throw ValidationError("give an emoji or --remove, not both") }
        if !remove, emoji == nil { throw ValidationError("give the emoji to react with, or --remove") }
    }

    func run() async throws {
        guard let id = UUID(uuidString: messageID) else { throw ValidationError("\(messageID) is not a message id") }
        let messenger = try options.open()
        _ = await syncQuietly(messenger)
        try await messenger.react(to: id, with: remove ? nil : emoji)
        print(remove ? "reaction removed" : TerminalText.printable("reacted \(emoji ?? "")", keepingNewlines: false))
    }
}
