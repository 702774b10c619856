import ArgumentParser
import ConfidantCrypto
import ConfidantKit
import Foundation

/// `confidant chat [open] EMAIL`: recent history, then live messages while you type — a terminal
/// rendering of `ChatViewModel`.
struct ChatOpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open", abstract: "Chat with someone: history, then live messages while you type.",
        discussion: """
            Type a line and press Enter to send it. Commands: /verify (safety numbers), /verify mark, \
            /retry (failed messages), /confirm (send a held message after a key change), /quit.
            """)

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The peer's e-mail.") var email: String
    @Option(name: .long, help: "How many earlier messages to show.") var limit = 20

    @MainActor
    func run() async throws {
        let messenger = try options.open()
        let problem = await syncQuietly(messenger)
        let contact = try await messenger.contact(email: email)
        let model = ChatViewModel(messenger: messenger, peer: contact, limit: max(1, limit))
        await model.load()
        let screen = ChatScreen(prompt: "you> ", interactive: Terminal.stdinIsTTY)
        defer { screen.restore() }
        screen.show(
            TerminalStyle.dim(
                "chat with \(contact.displayName) <\(contact.email)> — /help for commands, /quit to leave"))
        let renderer = ChatRenderer(
            screen: screen, peerName: contact.displayName, login: options.profile.suggestion("account login"))
        renderer.show(model.messages, initial: true)
        if let problem { screen.show(TerminalStyle.warning(problem)) }
        await messenger.startLive()
        screen.start()
        let live = Task { await model.run() }
        let messages = Task {
            for await messages in observedValues({ model.messages }) { renderer.show(messages, initial: false) }
        }
        let connection = Task { for await state in observedValues({ model.connection }) { renderer.show(state) } }
        defer {
            live.cancel()
            messages.cancel()
            connection.cancel()
        }
        var held: String?
        for await line in screen.lines() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            switch text {
            case "/quit", "/exit":
                await messenger.stopLive()
                return
            case "/help":
                screen.show(
                    "/verify  safety numbers · /verify mark  mark verified · /retry  resend failed · /confirm  send a held message · /quit"
                )
            case "/verify", "/verify mark":
                await verify(model, mark: text == "/verify mark", screen: screen)
            case "/retry":
                if model.failedMessages.isEmpty { screen.show("no failed messages") }
                for message in model.failedMessages { await model.retry(message.id) }
            case "/confirm":
                guard let pending = held else {
                    screen.show("nothing is waiting for confirmation")
                    continue
                }
                held = nil
                _ = await send(pending, model, confirm: true, renderer: renderer)
            default:
                if text.hasPrefix("/") && !text.hasPrefix("//") {
                    screen.show("unknown command \(text); /help lists them")
                } else if await !send(line, model, confirm: false, renderer: renderer) {
                    held = line
                }
            }
        }
        await messenger.stopLive()
    }

    /// Sends the line; false when it is held for a key-change confirmation.
    @MainActor
    private func send(_ text: String, _ model: ChatViewModel, confirm: Bool, renderer: ChatRenderer) async -> Bool {
        model.draft = text
        let sent = await model.send(confirmKeyChange: confirm)
        if model.needsKeyChangeConfirmation {
            renderer.screen.show(
                TerminalStyle.warning(
                    "⚠ \(model.peer.displayName)'s security key changed after you verified it. /verify to compare, /confirm to send anyway."
                ))
            return false
        }
        if let sent {
            renderer.sent(sent)
        } else if let error = model.error {
            renderer.screen.show(TerminalStyle.error("not sent: \(error)"))
        }
        return true
    }

    @MainActor
    private func verify(_ model: ChatViewModel, mark: Bool, screen: ChatScreen) async {
        if mark { await model.markVerified() } else { await model.checkVerification() }
        guard let verification = model.verification else {
            return screen.show(TerminalStyle.error(model.error ?? "could not fetch the keys"))
        }
        for (device, number) in verification.safetyNumbers {
            screen.show("safety number (device \(device.canonicalString.prefix(8))): \(number.grouped)")
        }
        switch verification.state {
        case .verified:
            screen.show(mark ? TerminalText.printable("marked \(model.peer.displayName) verified") : "verified")
        case .unverified:
            screen.show(
                TerminalText.printable(
                    "not verified; compare the numbers with \(model.peer.displayName), then /verify mark"))
        case .changedSinceVerification: screen.show(TerminalStyle.warning("⚠ the keys changed since you verified them"))
        }
    }
}

/// Prints a chat's lines as they come: each message once, a failed send when it fails, and the
/// connection's ups and downs.
@MainActor
final class ChatRenderer {
    let screen: ChatScreen
    private let peerName: String
    /// What was printed, by message id and direction, with the status it was printed with.
    private var shown: [String: ChatMessage.Status] = [:]
    private var lastState: ConnectionState?
    /// The command that signs this profile in again, for when its session ends.
    private let login: String

    init(screen: ChatScreen, peerName: String, login: String) {
        self.screen = screen
        self.peerName = peerName
        self.login = login
    }

    private func key(_ message: ChatMessage) -> String { "\(message.id.canonicalString)|\(message.direction.rawValue)" }

    /// New lines; an own message is printed once it has left the outbox (or by `sent`, when it
    /// waits there), so a send does not print a "queued" line for the moment it is in flight.
    func show(_ messages: [ChatMessage], initial: Bool) {
        for message in messages {
            let key = key(message)
            if let printed = shown[key] {
                if case .failed(let reason) = message.status, printed != message.status {
                    screen.show(TerminalStyle.error("not sent: \(message.displayText.prefix(40)): \(reason)"))
                    shown[key] = message.status
                }
                continue
            }
            if !initial, message.direction == .outgoing, message.status == .pending { continue }
            screen.show(TerminalStyle.line(message, peerName: peerName))
            shown[key] = message.status
        }
    }

    /// The message just sent, as `send` returned it.
    func sent(_ message: ChatMessage) {
        guard shown[key(message)] == nil else { return }
        screen.show(TerminalStyle.line(message, peerName: peerName))
        shown[key(message)] = message.status
    }

    func show(_ state: ConnectionState) {
        switch state {
        case .waiting(let delay, let reason) where lastState == .live || lastState == nil:
            screen.show(
                TerminalStyle.warning(
                    "disconnected (\(reason)); reconnecting in \(delay.formatted(.units(allowed: [.seconds])))…"))
        case .signedOut where lastState != .signedOut:
            screen.show(
                TerminalStyle.warning(
                    "this device's session ended (signed out, or removed from another device); run \(login)"))
        case .live where lastState != .live && lastState != nil && lastState != .connecting:
            screen.show(TerminalStyle.dim("connected"))
        default: break
        }
        if state != .connecting { lastState = state }
    }
}
