import ArgumentParser
import ConfidantKit
import Foundation

/// `confidant group …`: make groups and change who is in them. Each change is signed by this
/// device and sent to every member's devices; nobody else, the server included, learns the
/// group's name or members.
struct GroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group", abstract: "Make groups, change who is in them, and write to them.",
        discussion: """
            A group is named by its id or by a unique prefix of its name or id (`group list` shows \
            them). Only its admins add, remove, rename, make admins and set the timer; anyone leaves. Every member's \
            devices apply the same signed changes and agree on the result, also when two admins \
            change it at once.
            """,
        subcommands: [
            GroupCreateCommand.self, GroupListCommand.self, GroupInfoCommand.self, GroupAddCommand.self,
            GroupRemoveCommand.self, GroupLeaveCommand.self, GroupRenameCommand.self, GroupAdminCommand.self,
            GroupTimerCommand.self, GroupSendCommand.self, GroupHistoryCommand.self,
        ])
}

/// The group a command names, and how it prints one.
struct GroupTarget: ParsableArguments {
    @Argument(help: "The group: its id, or a unique prefix of its name or id.") var group: String

    /// The profile's messenger, synced (quietly: offline, the groups this device holds), and
    /// the group `group` names.
    func open(_ options: MessengerOptions) async throws -> (Messenger, GroupState) {
        let messenger = try options.open()
        _ = await syncQuietly(messenger)
        return (messenger, try await resolve(in: messenger))
    }

    /// The group `group` names among those this device knows (after a sync).
    func resolve(in messenger: Messenger) async throws -> GroupState {
        let groups = try await messenger.groups()
        if let id = UUID(uuidString: group), let exact = groups.first(where: { $0.groupID == id }) { return exact }
        let wanted = group.lowercased()
        let matches = groups.filter {
            $0.name.lowercased().hasPrefix(wanted) || $0.groupID.canonicalString.hasPrefix(wanted)
        }
        if matches.count == 1 { return matches[0] }
        if let named = matches.first(where: { $0.name.lowercased() == wanted }),
            matches.filter({ $0.name.lowercased() == wanted }).count == 1
        {
            return named
        }
        throw ValidationError(
            matches.isEmpty
                ? "this device knows no group \"\(group)\"; `confidant group list` shows the groups it knows"
                : "\"\(group)\" names \(matches.count) groups; give more of the name, or the id")
    }
}

/// The people the e-mail addresses name, in order (the directory, or contacts this device knows).
func contacts(_ emails: [String], in messenger: Messenger) async throws -> [Contact] {
    var contacts: [Contact] = []
    for email in emails { contacts.append(try await messenger.contact(email: email)) }
    return contacts
}

/// Members' names for printing: contacts this device knows, else the user id.
func memberNames(_ users: [UUID], in messenger: Messenger) async -> [UUID: String] {
    let me = await messenger.me
    var names: [UUID: String] = [:]
    for user in users {
        if user == me {
            names[user] = "you"
        } else if let contact = try? await messenger.knownContact(user) {
            names[user] = TerminalText.printable("\(contact.displayName) <\(contact.email)>", keepingNewlines: false)
        } else {
            names[user] = user.canonicalString
        }
    }
    return names
}

/// Prints a group: name, id, version, members with roles.
func printGroup(_ state: GroupState, _ messenger: Messenger) async {
    let names = await memberNames(state.members, in: messenger)
    let name = TerminalText.printable(state.name, keepingNewlines: false)
    print("\(name)  (\(state.groupID.canonicalString), version \(state.version))")
    for member in state.members {
        print("  \(names[member] ?? member.canonicalString)\(state.admins.contains(member) ? "  admin" : "")")
    }
}

struct GroupCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Make a group with you as its admin.")

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The group's name (1 to 128 bytes).") var name: String
    @Option(name: .customLong("member"), help: "A member's e-mail; repeat for each.") var members: [String] = []

    func validate() throws {
        if members.isEmpty { throw ValidationError("name at least one member with --member EMAIL") }
    }

    func run() async throws {
        let messenger = try options.open()
        let state = try await messenger.createGroup(name: name, members: try await contacts(members, in: messenger))
        await printGroup(state, messenger)
    }
}

struct GroupListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The groups this device knows.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var output: OutputOptions

    struct Row: Encodable { let id: String, name: String, members: Int, admin: Bool, member: Bool }

    func run() async throws {
        let messenger = try options.open()
        if let note = await syncQuietly(messenger) { Terminal.printError(note) }
        let me = await messenger.me
        let rows = try await messenger.groups().map {
            Row(
                id: $0.groupID.canonicalString, name: $0.name, members: $0.members.count, admin: $0.admins.contains(me),
                member: $0.members.contains(me))
        }
        if output.json { return try JSONOutput.print(rows) }
        print(
            TerminalStyle.table(
                ["GROUP", "NAME", "MEMBERS", ""],
                rows.map {
                    [
                        $0.id, TerminalText.printable($0.name, keepingNewlines: false), String($0.members),
                        $0.admin ? "admin" : $0.member ? "" : "(not a member)",
                    ]
                }))
    }
}

struct GroupInfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "A group's members and admins, and the changes its members refused.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var target: GroupTarget

    func run() async throws {
        let messenger = try options.open()
        if let note = await syncQuietly(messenger) { Terminal.printError(note) }
        let details = try await messenger.group(try await target.resolve(in: messenger).groupID)
        await printGroup(details.state, messenger)
        guard !details.refused.isEmpty else { return }
        let names = await memberNames(details.refused.map(\.author), in: messenger)
        print("refused changes:")
        for refusal in details.refused {
            print("  by \(names[refusal.author] ?? refusal.author.canonicalString): \(refusal.reason)")
        }
    }
}
