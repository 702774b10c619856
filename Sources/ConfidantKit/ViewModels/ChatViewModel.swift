import Foundation
import Observation

/// One conversation: history, sending with a draft, live incoming messages, the key-change banner,
/// placeholders for unreadable messages, and failed sends with retry.
@MainActor @Observable
public final class ChatViewModel {
    public let peer: Contact
    public private(set) var messages: [ChatMessage] = []
    public var draft = ""
    /// Shown when the peer's security key changed since your last message to them.
    public private(set) var keyChangeBanner: String?
    /// The last send was held because a verified peer's key changed; `send(confirmKeyChange: true)` sends anyway.
    public private(set) var needsKeyChangeConfirmation = false
    public private(set) var error: String?
    private let messenger: Messenger

    public init(messenger: Messenger, peer: Contact) {
        self.messenger = messenger
        self.peer = peer
    }

    /// Loads the history and marks it read.
    public func load(limit: Int = 200) async {
        do {
            messages = try await messenger.history(with: peer.id, limit: limit)
            try await messenger.markRead(peer.id)
            updateBanner()
        } catch {
            self.error = String(describing: error)
        }
    }

    private func updateBanner() {
        let lastNotice = messages.lastIndex { $0.direction == .notice }
        let lastSent = messages.lastIndex { $0.direction == .outgoing }
        if let lastNotice, lastSent.map({ $0 < lastNotice }) ?? true {
            keyChangeBanner = messages[lastNotice].text
        } else {
            keyChangeBanner = nil
        }
    }

    public func send(confirmKeyChange: Bool = false) async {
        let text = draft
        guard !text.isEmpty else { return }
        do {
            _ = try await messenger.send(text, to: peer, confirmKeyChange: confirmKeyChange)
            draft = ""
            needsKeyChangeConfirmation = false
            error = nil
        } catch ConfidantKitError.keyChangedSinceVerification(let name) {
            needsKeyChangeConfirmation = true
            error = ConfidantKitError.keyChangedSinceVerification(name: name).description
        } catch {
            self.error = String(describing: error)
        }
        await load()
    }

    public func retry(_ id: UUID) async {
        do {
            _ = try await messenger.retry(id)
        } catch {
            self.error = String(describing: error)
        }
        await load()
    }

    /// Applies live events for this conversation until the task is cancelled.
    public func listen() async {
        for await event in await messenger.events() {
            switch event {
            case .message(let message) where message.peer == peer.id:
                if let index = messages.firstIndex(where: { $0.id == message.id && $0.direction == message.direction }) {
                    messages[index] = message
                } else {
                    messages.append(message)
                }
                updateBanner()
                try? await messenger.markRead(peer.id)
            case .delivery(let id, let status):
                if let index = messages.firstIndex(where: { $0.id == id && $0.direction == .outgoing }) {
                    messages[index] = messages[index].with(status: status)
                }
            default:
                break
            }
        }
    }
}
