import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation

/// `confidant chat attachment save MESSAGE_ID` (also `confidant attachment save`).
struct AttachmentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attachment", abstract: "Save the files a message carries.",
        subcommands: [AttachmentSaveCommand.self])
}

struct AttachmentSaveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "save", abstract: "Decrypt a message's attachments into a directory.",
        discussion: """
            The message id is in `confidant chat history EMAIL --json`. Each file is fetched (if this device does \
            not have it yet), checked against the digest its message carries, and decrypted; a damaged or \
            truncated file is reported and nothing is written.
            """)

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The message's id.") var messageID: String
    @Option(name: .long, help: "Only the attachment at this position (0 is the first).") var index: Int?
    @Option(name: .long, help: "Where to write the files (default: the current directory).") var out = "."
    @Option(
        name: .customLong("with"),
        help: "The conversation's e-mail, when another conversation has a message with the same id.")
    var peerEmail: String?

    func run() async throws {
        guard let id = UUID(uuidString: messageID) else { throw ValidationError("\(messageID) is not a message id") }
        let messenger = try options.open()
        _ = await syncQuietly(messenger)
        var peer: UUID?
        if let peerEmail { peer = try await messenger.contact(email: peerEmail).id }
        let directory = URL(fileURLWithPath: out)
        let bars = TransferBars()
        if let index {
            let file = try await messenger.saveAttachment(
                of: id, index: index, with: peer, to: directory, progress: bars.update)
            bars.finish()
            return print("saved \(file.path)")
        }
        // Every attachment of the message, in order, until there is no next one.
        var next = 0
        while true {
            do {
                let file = try await messenger.saveAttachment(
                    of: id, index: next, with: peer, to: directory, progress: bars.update)
                bars.finish()
                print("saved \(file.path)")
                next += 1
            } catch ConfidantKitError.messageNotFound where next > 0 {
                return
            }
        }
    }
}

/// `confidant chat edit MESSAGE_ID TEXT`.
struct EditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit", abstract: "Change the text of a message you sent (the peer sees it marked edited).")

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The message's id (from `chat history --json`).") var messageID: String
    @Argument(help: "The new text.") var text: String

    func run() async throws {
        guard let id = UUID(uuidString: messageID) else { throw ValidationError("\(messageID) is not a message id") }
        try await options.open().edit(id, text: text)
        print("edited")
    }
}

/// `confidant chat delete MESSAGE_ID`.
struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a message you sent, for everyone (its text and files).")

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The message's id (from `chat history --json`).") var messageID: String

    func run() async throws {
        guard let id = UUID(uuidString: messageID) else { throw ValidationError("\(messageID) is not a message id") }
        try await options.open().deleteForEveryone(id)
        print("deleted for everyone")
    }
}

/// `confidant chat timer EMAIL DURATION|off`.
struct TimerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timer", abstract: "Disappearing messages in a conversation: 30s, 5m, 1h, 1d, 1w, or off.",
        discussion: """
            Messages sent from then on, by either side, are deleted from every device that long after the device \
            got them (the local store overwrites them on disk). From 5 seconds to 4 weeks. Without a duration, \
            shows the timer.
            """)

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The contact's e-mail.") var email: String
    @Argument(help: "30s, 5m, 1h, 1d, 1w, or off.") var duration: String?

    static func seconds(_ text: String) -> Int? {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        guard let unit = text.last.flatMap({ units[$0] }), let count = Int(text.dropLast()), count > 0 else {
            return nil
        }
        return count.multipliedReportingOverflow(by: unit).overflow ? nil : count * unit
    }

    func validate() throws {
        if let duration, duration != "off" {
            guard let seconds = Self.seconds(duration) else {
                throw ValidationError("give the duration as 30s, 5m, 1h, 1d or 1w, or off")
            }
            guard DisappearingTimer.accepts(seconds) else {
                throw ValidationError("the timer goes from 5s to 4w")
            }
        }
    }

    func run() async throws {
        let messenger = try options.open()
        let contact = try await messenger.contact(email: email)
        if let duration {
            try await messenger.setDisappearingTimer(duration == "off" ? nil : Self.seconds(duration), with: contact)
        }
        let timer = try await messenger.disappearingTimer(with: contact.id)
        print(
            timer.map { "disappearing messages with \(contact.displayName): \(DisappearingTimer.describe($0))" }
                ?? "disappearing messages with \(contact.displayName): off")
    }
}

/// `confidant account read-receipts [on|off]`.
struct ReadReceiptsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read-receipts", abstract: "Tell peers when you read their messages (on by default).",
        discussion:
            "Delivery receipts (✓✓) always go; read receipts only while this is on. Without an argument, shows it.")

    enum Setting: String, ExpressibleByArgument, CaseIterable { case on, off }

    @OptionGroup var options: MessengerOptions
    @Argument(help: "on or off.") var setting: Setting?

    func run() async throws {
        let messenger = try options.open()
        if let setting { try await messenger.setReadReceipts(setting == .on) }
        print("read receipts: \(await messenger.account.sendsReadReceipts ? "on" : "off")")
    }
}

/// `confidant account avatar FILE`.
struct AvatarCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "avatar", abstract: "Set your profile picture (PNG or JPEG, up to 1 MB).",
        discussion: "Profile pictures are public profile data: everyone on the server can see them.")

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The picture.") var file: String

    func run() async throws {
        let avatar = try Avatar(try FileIO.read(file))
        try await options.open().setAvatar(avatar)
        print("profile picture set")
    }
}

/// `confidant account name NAME`.
struct NameCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "name", abstract: "Change the name others see.")

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The new name.") var name: String

    func run() async throws {
        let messenger = try options.open()
        try await messenger.updateProfile(displayName: name)
        print("others now see you as \(await messenger.account.displayName)")
    }
}
