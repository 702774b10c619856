import ArgumentParser
import ConfidantKit
import Foundation

/// The commands that change a group: each signs one change here and sends it to every member.

struct GroupAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add people to a group (admins only); they receive its history.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget
    @Argument(help: "The e-mail of each person to add.") var emails: [String]

    func run() async throws {
        let (messenger, group) = try await target.open(options)
        let added = try await contacts(emails, in: messenger)
        await printGroup(try await messenger.addToGroup(group.groupID, added), messenger)
    }
}

struct GroupRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove members from a group (admins only).")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget
    @Argument(help: "The e-mail of each member to remove.") var emails: [String]

    func run() async throws {
        let (messenger, group) = try await target.open(options)
        let removed = try await contacts(emails, in: messenger).map(\.id)
        await printGroup(try await messenger.removeFromGroup(group.groupID, removed), messenger)
    }
}

struct GroupLeaveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "leave",
        abstract: "Leave a group; if you are its last admin, the longest-standing member becomes one.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget

    func run() async throws {
        let (messenger, group) = try await target.open(options)
        _ = try await messenger.leaveGroup(group.groupID)
        print("you left \(TerminalText.printable(group.name, keepingNewlines: false))")
    }
}

struct GroupRenameCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rename", abstract: "Rename a group (admins only).")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget
    @Argument(help: "The new name (1 to 128 bytes).") var name: String

    func run() async throws {
        let (messenger, group) = try await target.open(options)
        await printGroup(try await messenger.renameGroup(group.groupID, to: name), messenger)
    }
}

struct GroupAdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: "Make a member an admin, or with --revoke a member only (admins only).")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget
    @Argument(help: "The member's e-mail.") var email: String
    @Flag(name: .long, help: "Take admin rights away instead.") var revoke = false

    func run() async throws {
        let (messenger, group) = try await target.open(options)
        let user = try await messenger.contact(email: email).id
        await printGroup(try await messenger.setGroupAdmin(group.groupID, user, admin: !revoke), messenger)
    }
}

struct GroupTimerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timer", abstract: "Disappearing messages in a group: 30s, 5m, 1h, 1d, 1w, or off (admins only).",
        discussion: """
            Every member's device deletes a group message that long after it got it. Without a duration, shows \
            the timer.
            """)

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget
    @Argument(help: "30s, 5m, 1h, 1d, 1w, or off.") var duration: String?

    func validate() throws {
        if let duration, duration != "off" {
            guard let seconds = TimerCommand.seconds(duration) else {
                throw ValidationError("give the duration as 30s, 5m, 1h, 1d or 1w, or off")
            }
            guard DisappearingTimer.accepts(seconds) else { throw ValidationError("the timer goes from 5s to 4w") }
        }
    }

    func run() async throws {
        let (messenger, group) = try await target.open(options)
        var state = group
        if let duration {
            state = try await messenger.setGroupTimer(
                group.groupID, seconds: duration == "off" ? nil : TimerCommand.seconds(duration))
        }
        let name = TerminalText.printable(state.name, keepingNewlines: false)
        print(
            state.timerSeconds > 0
                ? "disappearing messages in \(name): \(DisappearingTimer.describe(state.timerSeconds))"
                : "disappearing messages in \(name): off")
    }
}
