import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation

/// `confidant chat users`.
struct UsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "List the server's users (everyone but you).")

    @OptionGroup var options: MessengerOptions
    @Option(name: .long, help: "Only users whose e-mail or name starts with this.") var search: String?
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let users = try await options.open().users(search: search)
        if output.json { return try JSONOutput.print(users) }
        if users.isEmpty { return print(search == nil ? "no other users yet" : "no user matches \(search ?? "")") }
        print(TerminalStyle.table(["NAME", "E-MAIL"], users.map { [$0.displayName, $0.email] }))
    }
}

/// `confidant chat send EMAIL [TEXT | -] [--attach FILE…]` (also `confidant send`).
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Send a message, files, or both.",
        discussion: """
            With - or no text (and no --attach), the message is read from standard input; with --each-line every \
            line of standard input is its own message, sent in order. Files are encrypted on this device before \
            they are uploaded; the server sees neither their names nor their contents. When the server is down \
            messages wait in the outbox and go, in order, with your next command.
            """)

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The recipient's e-mail.") var email: String
    @Argument(help: "The message, or - for standard input.") var text: String?
    @Option(name: .long, help: "A file to send (repeatable).") var attach: [String] = []
    @Flag(name: .long, help: "Send each non-empty line of standard input as its own message.") var eachLine = false
    @Flag(name: .long, help: "Send even if a verified contact's key changed.") var yes = false
    @Option(name: .long, help: "Reply to this message of the conversation (an id from `chat history --json`).")
    var replyTo: String?

    func validate() throws {
        if let replyTo, UUID(uuidString: replyTo) == nil {
            throw ValidationError("--reply-to takes a message id, not \(replyTo)")
        }
        if eachLine, replyTo != nil { throw ValidationError("--reply-to goes with one message, not --each-line") }
        if eachLine, let text, text != "-" {
            throw ValidationError("--each-line reads standard input; leave out the text")
        }
        if eachLine, !attach.isEmpty { throw ValidationError("--attach goes with one message, not --each-line") }
    }

    func run() async throws {
        let bodies: [String?]
        if let text, text != "-" {
            bodies = [text]
        } else if !attach.isEmpty && text == nil {
            bodies = [nil]
        } else {
            var data = FileHandle.standardInput.readDataToEndOfFile()
            if data.last == UInt8(ascii: "\n") { data.removeLast() }
            let input = String(decoding: data, as: UTF8.self)
            bodies = eachLine ? input.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) : [input]
        }
        let files = attach.map { AttachmentSource(url: URL(fileURLWithPath: $0)) }
        for file in files where !FileManager.default.isReadableFile(atPath: file.url.path) {
            throw CLIError.unreadable(path: file.url.path, reason: "no such file or no permission")
        }
        let messenger = try options.open()
        let contact = try await messenger.contact(email: email)
        var confirmed = yes
        var sent = 0
        var queued = 0
        let bars = TransferBars()
        for (position, body) in bodies.enumerated() {
            let message: ChatMessage
            let target = replyTo.flatMap(UUID.init(uuidString:))
            func send(confirming: Bool) async throws -> ChatMessage {
                let attachments = position == 0 ? files : []
                if let target {
                    return try await messenger.reply(
                        to: target, with: body, attachments: attachments, in: contact, confirmKeyChange: confirming,
                        progress: bars.update)
                }
                return try await messenger.send(
                    body, attachments: attachments, to: contact, confirmKeyChange: confirming, progress: bars.update)
            }
            do {
                message = try await send(confirming: confirmed)
            } catch ConfidantKitError.keyChangedSinceVerification(let name) where Terminal.stdinIsTTY && !eachLine {
                print(TerminalStyle.warning("\(name)'s security key changed after you verified it."), terminator: " ")
                guard try Terminal.confirm("Send anyway? [y/N] ") else { throw ExitCode.failure }
                confirmed = true
                message = try await send(confirming: true)
            }
            bars.finish()
            switch message.status {
            case .sent, .delivered, .read: sent += 1
            case .pending: queued += 1
            case .failed(let reason):
                Terminal.printError("not sent: \(reason)")
                if sent + queued > 0 { Terminal.printError("(\(sent) sent and \(queued) queued before it)") }
                throw ExitCode.failure
            case .received: break
            }
        }
        // A sent message's copy here is synced in the background (the relay holds it already);
        // this process ends now, so that sync goes before it does.
        await messenger.stopLive()
        if queued > 0 {
            print(
                bodies.count == 1
                    ? "queued: the server cannot take it now; it goes with your next command (or a running chat) once it can"
                    : "\(sent) sent, \(queued) queued: the server cannot take them now; they go, in order, with your next command (or a running chat) once it can"
            )
            if let reason = await messenger.lastUnreachable { Terminal.printError(reason) }
        } else {
            print(
                bodies.count == 1 ? "sent to \(contact.displayName)" : "sent \(sent) messages to \(contact.displayName)"
            )
        }
    }
}

/// Progress bars for attachments on a terminal: one per file and stage.
final class TransferBars: @unchecked Sendable {
    // @unchecked: `update` is called from one task at a time (the transfer's), `lock` guards the rest.
    private let lock = NSLock()
    private var current: (key: String, bar: ProgressBar)?

    func update(_ progress: AttachmentProgress) {
        lock.lock()
        defer { lock.unlock() }
        let key = "\(progress.name)|\(progress.stage.rawValue)"
        if current?.key != key {
            current?.bar.finish()
            current = (
                key, ProgressBar(label: "\(progress.stage.rawValue) \(progress.name)", total: Int(progress.total))
            )
        }
        current?.bar.update(Int(progress.done))
    }

    func finish() {
        lock.lock()
        defer { lock.unlock() }
        current?.bar.finish()
        current = nil
    }
}

/// `confidant chat inbox` (also `confidant inbox`).
struct InboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbox", abstract: "Recent conversations with unread counts.")

    @OptionGroup var options: MessengerOptions
    @OptionGroup var output: OutputOptions

    struct Row: Encodable {
        let email: String, name: String, lastActivity: Date, timeAgo: String, unread: Int, preview: String,
            keyChangeWarning: String?, avatarDigest: String?
        /// Marked unread (`chat mark-unread`): `unread` is then at least 1.
        let markedUnread: Bool
        /// What the app's composer holds for the conversation and did not send.
        let draft: String?
    }

    /// A terminal rendering of `ConversationsViewModel`.
    @MainActor
    func run() async throws {
        let model = ConversationsViewModel(messenger: try options.open())
        await model.refresh()
        let rows = model.rows.map { row in
            Row(
                email: row.summary.peer.email, name: row.summary.peer.displayName,
                lastActivity: row.summary.lastActivity,
                timeAgo: row.timeAgo, unread: row.summary.shownUnread, preview: row.summary.preview,
                keyChangeWarning: row.summary.keyChangeWarning, avatarDigest: row.summary.peer.avatarDigest,
                markedUnread: row.summary.markedUnread, draft: row.summary.draft?.text)
        }
        if let error = model.error {
            Terminal.printError(model.isOffline ? "offline: \(error); showing what this device has" : error)
        }
        // What happened to the account (a device signed in to it) goes first, on stderr so that
        // --json stays a list of conversations; shown once, then marked seen.
        if !model.accountNotices.isEmpty {
            for notice in model.accountNotices {
                FileHandle.standardError.write(Data((TerminalStyle.warning("⚠ \(notice)") + "\n").utf8))
            }
            let devices = options.profile.suggestion("account devices")
            let remove = options.profile.suggestion("account devices", "--remove ID")
            FileHandle.standardError.write(Data("  your devices: \(devices); remove one: \(remove)\n".utf8))
            await model.dismissAccountNotices()
        }
        if output.json { return try JSONOutput.print(rows) }
        if rows.isEmpty {
            return print("no conversations yet; \(options.profile.suggestion("send", "EMAIL TEXT")) starts one")
        }
        let table = TerminalStyle.table(
            ["NAME", "E-MAIL", "LAST", "UNREAD", "MESSAGE"],
            rows.map { row in
                [
                    row.name, row.email, row.timeAgo, row.unread == 0 ? "" : String(row.unread),
                    row.draft.map { "draft: " + $0.prefix(43) } ?? String(row.preview.prefix(50)),
                ]
            })
        print(table)
        for row in rows {
            if let warning = row.keyChangeWarning { print(TerminalStyle.warning("⚠ \(warning)")) }
        }
    }
}

/// `confidant chat verify EMAIL`.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Show the safety number with a contact; mark them verified.",
        discussion:
            "Compare the numbers with your contact in person or on a call; if they match, run again with --mark.")

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The contact's e-mail.") var email: String
    @Flag(name: .long, help: "Mark the contact's current keys as verified.") var mark = false

    func run() async throws {
        let messenger = try options.open()
        let contact = try await messenger.contact(email: email)
        let verification = try await messenger.verification(of: contact)
        print(TerminalText.printable("safety numbers with \(contact.displayName) <\(contact.email)>:"))
        for (device, number) in verification.safetyNumbers {
            print("  device \(device.canonicalString.prefix(8)):  \(number.grouped)")
        }
        if mark {
            try await messenger.markVerified(contact)
            print("marked verified; you will be asked before sending if these keys change")
        } else {
            switch verification.state {
            case .verified: print(TerminalStyle.accent("verified"))
            case .unverified:
                let mark = options.profile.suggestion("chat verify", ShellWord.quoted(email), "--mark")
                print(TerminalText.printable("not verified; if the numbers match, run \(mark)"))
            case .changedSinceVerification: print(TerminalStyle.warning("⚠ the keys changed since you verified them"))
            }
        }
    }
}
