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
