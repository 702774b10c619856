import ConfidantCrypto
import ArgumentParser
import ConfidantKit
import Foundation

/// `confidant chat EMAIL`: recent history, then live messages while you type.
struct ChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat", abstract: "Chat with someone: history, then live messages while you type.",
        discussion: """
            Type a line and press Enter to send it. Commands: /verify (safety numbers), /verify mark, \
            /retry (failed messages), /confirm (send a held message after a key change), /quit.
            """)

    @OptionGroup var options: MessengerOptions
    @Argument(help: "The peer's e-mail.") var email: String
    @Option(name: .long, help: "How many earlier messages to show.") var limit = 20

    func run() async throws {
        let messenger = try options.open()
        let problem = await syncQuietly(messenger)
        let contact = try await messenger.contact(email: email)
        let screen = ChatScreen(prompt: "you> ", interactive: Terminal.stdinIsTTY)
        defer { screen.restore() }
        screen.show(TerminalStyle.dim("chat with \(contact.displayName) <\(contact.email)> — /help for commands, /quit to leave"))
        for message in try await messenger.history(with: contact.id, limit: max(1, limit)) {
            screen.show(TerminalStyle.line(message, peerName: contact.displayName))
        }
        if let problem { screen.show(TerminalStyle.warning(problem)) }
        try await messenger.markRead(contact.id)
        let events = await messenger.events()
        await messenger.startLive()
        screen.start()
        let printer = Task {
            var lastState: ConnectionState?
            for await event in events {
                switch event {
                case .message(let message) where message.peer == contact.id && message.direction != .outgoing:
                    screen.show(TerminalStyle.line(message, peerName: contact.displayName))
                    try? await messenger.markRead(contact.id)
                case .delivery(_, .failed(let reason)):
                    screen.show(TerminalStyle.error("not sent: \(reason)"))
                case .connection(let state):
                    switch state {
                    case .waiting(let delay, let reason) where lastState == .live || lastState == nil:
                        screen.show(TerminalStyle.warning("disconnected (\(reason)); reconnecting in \(delay.formatted(.units(allowed: [.seconds])))…"))
                    case .live where lastState != .live && lastState != nil && lastState != .connecting:
                        screen.show(TerminalStyle.dim("connected"))
                    default: break
                    }
                    if state != .connecting { lastState = state }
                default:
                    break
                }
            }
        }
        var held: String?
        for await line in screen.lines() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            switch text {
            case "/quit", "/exit":
                break
            case "/help":
                screen.show("/verify  safety numbers · /verify mark  mark verified · /retry  resend failed · /confirm  send a held message · /quit")
                continue
            case "/verify", "/verify mark":
                await verify(messenger, contact, mark: text == "/verify mark", screen: screen)
                continue
            case "/retry":
                await retry(messenger, contact, screen: screen)
                continue
            case "/confirm":
                if let pending = held {
                    held = nil
                    await send(pending, messenger, contact, confirm: true, screen: screen)
                } else {
                    screen.show("nothing is waiting for confirmation")
                }
                continue
            default:
                if text.hasPrefix("/") && !text.hasPrefix("//") {
                    screen.show("unknown command \(text); /help lists them")
                    continue
                }
                if await !send(line, messenger, contact, confirm: false, screen: screen) { held = line }
                continue
            }
            break
        }
        printer.cancel()
        await messenger.stopLive()
    }

    /// Sends and shows the line; false when the send is held for a key-change confirmation.
    @discardableResult
    private func send(_ text: String, _ messenger: Messenger, _ contact: Contact, confirm: Bool, screen: ChatScreen) async -> Bool {
        do {
            let message = try await messenger.send(text, to: contact, confirmKeyChange: confirm)
            screen.show(TerminalStyle.line(message, peerName: contact.displayName))
        } catch ConfidantKitError.keyChangedSinceVerification(let name) {
            screen.show(TerminalStyle.warning("⚠ \(name)'s security key changed after you verified it. /verify to compare, /confirm to send anyway."))
            return false
        } catch {
            screen.show(TerminalStyle.error("not sent: \(error)"))
        }
        return true
    }

    private func verify(_ messenger: Messenger, _ contact: Contact, mark: Bool, screen: ChatScreen) async {
        do {
            let verification = try await messenger.verification(of: contact)
            for (device, number) in verification.safetyNumbers {
                screen.show("safety number (device \(device.canonicalString.prefix(8))): \(number.grouped)")
            }
            if mark {
                try await messenger.markVerified(contact)
                screen.show("marked \(contact.displayName) verified")
            } else {
                switch verification.state {
                case .verified: screen.show("verified")
                case .unverified: screen.show("not verified; compare the numbers with \(contact.displayName), then /verify mark")
                case .changedSinceVerification: screen.show(TerminalStyle.warning("⚠ the keys changed since you verified them"))
                }
            }
        } catch {
            screen.show(TerminalStyle.error("\(error)"))
        }
    }

    private func retry(_ messenger: Messenger, _ contact: Contact, screen: ChatScreen) async {
        do {
            let failed = try await messenger.history(with: contact.id, limit: 500).filter {
                if case .failed = $0.status { return true } else { return false }
            }
            if failed.isEmpty { return screen.show("no failed messages") }
            for message in failed {
                let status = try await messenger.retry(message.id)
                screen.show("\(message.displayText.prefix(40)): \(status.label)")
            }
        } catch {
            screen.show(TerminalStyle.error("\(error)"))
        }
    }
}
