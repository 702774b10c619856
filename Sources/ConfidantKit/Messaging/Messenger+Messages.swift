import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Sending, the outbox, history and read state.
extension Messenger {
    /// Stores the message and delivers the outbox up to it. When the server is unreachable the
    /// message stays `pending` and goes, in order, with the next delivery (`sync`, the live
    /// stream's reconnect, or the next send), exactly once: the server deduplicates on its id.
    /// A message still pending when this returns is on disk; a sent one's copy here is synced
    /// within 100 ms (the relay holds it already), and ``stopLive()`` syncs what still waits.
    /// - Parameters:
    ///   - text: the message, at most ``ChatPayload/maximumTextBytes`` bytes of UTF-8.
    ///   - contact: who it goes to (and this account's other devices get a copy).
    ///   - confirmKeyChange: send even though a verified peer's keys changed since.
    /// - Returns: the message as stored: `sent`, `pending` when it waits for the server, or `failed`.
    public func send(_ text: String, to contact: Contact, confirmKeyChange: Bool = false) async throws -> ChatMessage {
        try await sender.send(text, attachments: [], to: contact, confirmKeyChange: confirmKeyChange) { _ in }
    }

    /// Sends files, with or without text: each is encrypted on this device with a key of its own
    /// (in constant memory, whatever its size), uploaded as ciphertext and granted to the peer
    /// alone; the relay never learns its name, type or key (docs/PROTOCOL.md §8).
    /// - Parameters:
    ///   - text: the message's text, if any (at most ``ChatPayload/maximumTextBytes`` bytes of UTF-8).
    ///   - attachments: the files, in the order the peer sees them.
    ///   - contact: who they go to (and this account's other devices get a copy).
    ///   - confirmKeyChange: send even though a verified peer's keys changed since.
    ///   - progress: called as each file is encrypted and uploaded.
    /// - Throws: `ConfidantKitError.attachmentTooLarge` for a file over the server's limit,
    ///   `.attachmentUnreadable` for one that cannot be read; nothing is queued then.
    public func send(
        _ text: String?, attachments: [AttachmentSource], to contact: Contact, confirmKeyChange: Bool = false,
        progress: @escaping @Sendable (AttachmentProgress) -> Void = { _ in }
    ) async throws -> ChatMessage {
        try await sender.send(
            text, attachments: attachments, to: contact, confirmKeyChange: confirmKeyChange, progress: progress)
    }

    /// Delivers everything waiting in the outbox, in order; returns how many went out.
    @discardableResult
    public func flushOutbox() async throws -> Int {
        store.controlsMayWait()
        return try await sender.deliverOutbox()
    }

    /// Queues a failed message again and tries to deliver it.
    public func retry(_ id: UUID, confirmKeyChange: Bool = false) async throws -> ChatMessage.Status {
        try await sender.retry(id, confirmKeyChange: confirmKeyChange)
    }

    /// Keeps prekeys topped up, delivers the outbox, then fetches, stores and acknowledges
    /// everything waiting on the server.
    @discardableResult
    public func sync() async throws -> [ChatMessage] {
        try await prekeys.maintain()
        store.controlsMayWait()
        try await sender.deliverOutbox()
        let received = try await receiver.fetchAll()
        // What receiving queued (delivery receipts) goes now.
        try await sender.deliverOutbox()
        return received
    }

    /// Conversations, most recent first.
    public func conversations() throws -> [ConversationSummary] { try store.conversations() }

    /// The last `limit` lines with a peer, oldest first.
    public func history(with peer: UUID, limit: Int = 50) throws -> [ChatMessage] {
        try store.history(with: peer, limit: limit)
    }

    /// Marks every message from `peer` (or in the group `peer`) read, and tells the peer — in a
    /// group, each message's author — by a sealed read receipt unless this profile keeps that to
    /// itself (``setReadReceipts(_:)``).
    public func markRead(_ peer: UUID) throws {
        let receipts = account.sendsReadReceipts && peer != me
        let read = try store.markRead(peer: peer, queueingReceipts: receipts, now: now())
        guard receipts, !read.isEmpty else { return }
        deliverInBackground()
    }

    /// Whether peers learn that their messages were read; delivery receipts always go.
    public func setReadReceipts(_ enabled: Bool) throws {
        account.sendsReadReceipts = enabled
        try store.saveAccount(account)
        openChats.setSendsReadReceipts(enabled)
    }

    /// Delivers the outbox without waiting for it (a control message was queued).
    func deliverInBackground() {
        let sender = sender
        Task { _ = try? await sender.deliverOutbox() }
    }

    /// Notices about the account itself — a device signed in to it, got a new key, or was
    /// removed — newest first: the unseen ones, or the last 50 with `all`.
    public func accountNotices(all: Bool = false) throws -> [ChatMessage] {
        try store.read { db in try store.accountNotices(of: me, all: all, db) }
    }

    /// Marks the account notices seen.
    public func markAccountNoticesSeen() throws { try store.markRead(peer: me) }
}

extension Messenger {
    /// One's own message in the conversation with `peer`, by id; nil when there is none there.
    public func ownMessage(_ id: UUID, with peer: UUID) throws -> ChatMessage? {
        guard let message = try store.message(id: id, direction: .outgoing), message.peer == peer else { return nil }
        return message
    }

    /// Any line of the conversation with `peer` by id — one's own, the peer's or a notice; nil
    /// when there is none there.
    public func message(_ id: UUID, with peer: UUID) throws -> ChatMessage? {
        for direction in [ChatMessage.Direction.outgoing, .incoming, .notice] {
            if let message = try store.message(id: id, direction: direction), message.peer == peer { return message }
        }
        return nil
    }
}
