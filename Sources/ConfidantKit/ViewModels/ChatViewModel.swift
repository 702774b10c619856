import Foundation
import Observation

/// One conversation: history, sending with a draft, the key-change banner, placeholders for
/// unreadable messages, and failed sends with retry. `run()` keeps it live: messages follow the
/// local store (arrivals, delivery states), are marked read while the chat is open, and the
/// connection shows as an offline banner.
@MainActor @Observable
public final class ChatViewModel {
    /// Who the chat is with.
    public let peer: Contact
    /// The latest lines, oldest first.
    public private(set) var messages: [ChatMessage] = []
    /// What is typed and not sent yet.
    public var draft = ""
    /// The message the draft answers, if any: ``send(confirmKeyChange:)`` sends a reply to it.
    public var replyingTo: UUID?
    /// Shown when the peer's security key changed since your last message to them.
    public private(set) var keyChangeBanner: String?
    /// The last send was held because a verified peer's key changed; `send(confirmKeyChange: true)` sends anyway.
    public private(set) var needsKeyChangeConfirmation = false
    /// The last thing that went wrong, in words.
    public private(set) var error: String?
    /// Where the live connection stands; anything but `.live` while running means "offline".
    public private(set) var connection: ConnectionState = .stopped
    /// The conversation's disappearing-message timer in seconds; nil when messages stay.
    public private(set) var disappearingTimer: Int?
    /// Whether the peer's keys, as this device knows them, are the ones you verified.
    public private(set) var verificationState: PeerVerification.State = .unverified
    private let messenger: Messenger
    private let limit: Int

    /// - Parameters:
    ///   - messenger: the signed-in profile.
    ///   - peer: who the chat is with.
    ///   - limit: how many of the latest lines the chat holds.
    public init(messenger: Messenger, peer: Contact, limit: Int = 200) {
        self.messenger = messenger
        self.peer = peer
        self.limit = limit
    }

    /// Reads the history once and marks it read; an empty composer takes the draft kept for the
    /// conversation.
    public func load() async {
        do {
            show(try await messenger.history(with: peer.id, limit: limit))
            if draft.isEmpty, replyingTo == nil, let kept = try await messenger.draft(in: peer.id) {
                draft = kept.text
                replyingTo = kept.replyTo
            }
            disappearingTimer = try await messenger.disappearingTimer(with: peer.id)
            verificationState = try await messenger.verificationState(of: peer.id)
            try await messenger.markRead(peer.id)
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Keeps the chat live until the task is cancelled. While it runs, what arrives from the peer
    /// is stored as read, and the peer gets a read receipt for it (unless read receipts are off).
    public func run() async {
        messenger.openChats.opened(peer.id)
        defer { messenger.openChats.closed(peer.id) }
        async let store: Void = followStore()
        async let timer: Void = followTimer()
        async let connection: Void = followConnection()
        _ = await (store, timer, connection)
    }

    private func followStore() async {
        do {
            for try await messages in messenger.historyUpdates(with: peer.id, limit: limit) {
                show(messages)
                if messages.indices.contains(where: { !messages[$0].isRead }) { try await messenger.markRead(peer.id) }
            }
        } catch {
            self.error = String(describing: error)
        }
    }

    /// The timer follows its own observation: read again after every update of the lines, it
    /// was a read transaction for every message that arrived in an open chat.
    private func followTimer() async {
        do {
            for try await timer in messenger.disappearingTimerUpdates(with: peer.id) { disappearingTimer = timer }
        } catch {
            self.error = String(describing: error)
        }
    }

    private func followConnection() async {
        // The state and its changes from one call on the messenger, so none falls between them
        // (read apart, a '.live' in between left the model 'offline' for good).
        for await state in await messenger.connectionUpdates() { connection = state }
    }

    /// The lines are looked at through their indices, a field at a time, so that no update of the
    /// chat copies each of its 200 lines (their texts, attachments).
    private func show(_ messages: [ChatMessage]) {
        self.messages = messages
        // The banner stays until something is sent after the latest key-change notice (a timer
        // notice is a line, not a warning).
        var banner: String?
        for index in messages.indices.reversed() {
            if messages[index].warnsOfKeyChange {
                banner = messages[index].text
                break
            }
            if messages[index].direction == .outgoing { break }
        }
        keyChangeBanner = banner
    }

    /// Sends the draft; a verified contact whose key changed asks for confirmation first.
    /// Returns the message as stored (pending when the server could not take it now).
    @discardableResult
    public func send(confirmKeyChange: Bool = false) async -> ChatMessage? {
        let text = draft
        guard !text.isEmpty else { return nil }
        var sent: ChatMessage?
        do {
            if let target = replyingTo {
                sent = try await messenger.reply(to: target, with: text, in: peer, confirmKeyChange: confirmKeyChange)
            } else {
                sent = try await messenger.send(text, to: peer, confirmKeyChange: confirmKeyChange)
            }
            draft = ""
            replyingTo = nil
            needsKeyChangeConfirmation = false
            error = nil
            try await messenger.saveDraft(ChatDraft(text: ""), in: peer.id)
        } catch ConfidantKitError.keyChangedSinceVerification(let name) {
            needsKeyChangeConfirmation = true
            error = ConfidantKitError.keyChangedSinceVerification(name: name).description
            await saveDraft()
        } catch {
            self.error = String(describing: error)
            if sent == nil { await saveDraft() }
        }
        await load()
        return sent
    }

    /// Keeps what the composer holds (``draft``, ``replyingTo``) as the conversation's draft, so
    /// that it is there when the chat opens again; an empty composer removes it.
    public func saveDraft() async {
        do {
            try await messenger.saveDraft(ChatDraft(text: draft, replyTo: replyingTo), in: peer.id)
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Marks the conversation unread (``Messenger/markUnread(_:)``), for when the user leaves it.
    public func markUnread() async {
        do {
            try await messenger.markUnread(peer.id)
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Deletes a message from this device only (``Messenger/deleteForMe(_:with:)``).
    public func deleteForMe(_ id: UUID) async {
        do {
            try await messenger.deleteForMe(id, with: peer.id)
        } catch {
            self.error = String(describing: error)
        }
        await load()
    }

    /// Queues a failed message again and tries to deliver it.
    public func retry(_ id: UUID) async {
        do {
            _ = try await messenger.retry(id)
        } catch {
            self.error = String(describing: error)
        }
        await load()
    }

    /// The safety numbers with the peer, once `checkVerification` ran.
    public private(set) var verification: PeerVerification?

    /// Fetches the peer's current keys and compares them with what was verified.
    public func checkVerification() async {
        do {
            verification = try await messenger.verification(of: peer)
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Marks the peer's current keys as verified (after comparing the safety numbers).
    public func markVerified() async {
        await changeVerification { messenger, peer in try await messenger.markVerified(peer) }
    }

    /// Forgets that the peer was verified.
    public func unmarkVerified() async {
        await changeVerification { messenger, peer in try await messenger.unmarkVerified(peer) }
    }

    /// Applies a change to what was verified, then reads the safety numbers and the state again.
    private func changeVerification(_ change: (Messenger, Contact) async throws -> Void) async {
        do {
            try await change(messenger, peer)
            verification = try await messenger.verification(of: peer)
        } catch {
            self.error = String(describing: error)
        }
        verificationState = (try? await messenger.verificationState(of: peer.id)) ?? .unverified
    }

    /// The messages that failed to send, for a "retry all".
    public var failedMessages: [ChatMessage] {
        messages.filter { if case .failed = $0.status { true } else { false } }
    }
}
