import ConfidantCrypto
import Foundation

/// Sending: a message is checked and its files encrypted (`SendPreparation`), stored and queued in
/// the outbox, then the outbox is delivered in the order messages were written (`OutboxDrain`):
/// in a window of ordered sends over the live stream (`StreamWindow`), or alone over the stream
/// or HTTP (`SingleDelivery`), each sealed once per recipient device and once per own other
/// device (`EnvelopeSealer`); after the messages, the queued control messages (`ControlDelivery`).
/// The relay deduplicates on the message id, so a retry never stores twice.
struct MessageSender: Sendable {
    let preparation: SendPreparation
    let drain: OutboxDrain
    let store: LocalStore
    let events: MessengerEvents
    let deviceID: UUID
    let now: @Sendable () -> Date

    /// How many times a send reads its context before it goes on the last one read unchecked.
    static let contextAttempts = 3

    init(
        relay: RelayClient, store: LocalStore, directory: KeyDirectory, cipher: SessionCipher, stream: StreamSender,
        events: MessengerEvents, retry: RetryPolicy, attachments: AttachmentTransfer,
        diagnostics: DeliveryDiagnostics? = nil, now: @escaping @Sendable () -> Date
    ) {
        preparation = SendPreparation(relay: relay, store: store, directory: directory, attachments: attachments)
        drain = OutboxDrain(
            relay: relay, store: store, directory: directory, cipher: cipher, stream: stream, events: events,
            retry: retry, attachments: attachments, diagnostics: diagnostics, now: now)
        self.store = store
        self.events = events
        deviceID = cipher.identity.deviceID
        self.now = now
    }

    /// Why the last delivery attempt did not get through, for "queued" messages.
    var lastUnreachable: String? { get async { await drain.lastUnreachable } }

    /// Stores the message (its files encrypted first), queues it, and delivers the outbox up to
    /// it. When the server cannot take it now the message stays `pending` and goes, in order,
    /// with the next delivery.
    func send(
        _ text: String?, attachments sources: [AttachmentSource], to contact: Contact, confirmKeyChange: Bool,
        replyTo: ReplyQuote? = nil, progress: @escaping @Sendable (AttachmentProgress) -> Void
    ) async throws -> ChatMessage {
        let text = try SendPreparation.checkedText(text, attachments: sources.count)
        try await preparation.checkSizes(sources)
        // The context as last read (`SendingContexts`): the transaction that queues the message
        // refuses it if a contact or timer changed since, and the context is read afresh.
        var known = try preparation.context(for: contact)
        var keys = try await preparation.keys(of: contact, known, confirmKeyChange: confirmKeyChange)
        let pointers = try preparation.encrypt(sources, for: contact.id, progress: progress)
        let sentAt = now()
        let id = UUID.timeOrdered(at: sentAt)
        func message(on context: SendingContext) -> LocalStore.NewMessage {
            LocalStore.NewMessage(
                id: id, peer: contact.id, direction: .outgoing, senderDevice: deviceID, sentAt: sentAt, text: text,
                unreadableReason: nil, state: .pending, attachments: pointers,
                expiresAt: context.timer.map { sentAt.addingTimeInterval(TimeInterval($0)) }, reply: replyTo)
        }
        let uploads = sources.isEmpty ? nil : progress
        let queued: OutboxDrain.QueuedNew
        do {
            var checked: OutboxDrain.QueuedNew?
            for _ in 1..<Self.contextAttempts where checked == nil {
                do {
                    checked = try await drain.queueNew(
                        message(on: known), keys: keys, confirmed: confirmKeyChange, builtOn: known, progress: uploads)
                } catch is SendingContexts.Stale {
                    known = try preparation.context(for: contact, fresh: true)
                    keys = try await preparation.keys(of: contact, known, confirmKeyChange: confirmKeyChange)
                }
            }
            // The last attempt goes on the context it has just read, unchecked: another process
            // writing all the while does not hold the message up.
            if let checked {
                queued = checked
            } else {
                queued = try await drain.queueNew(
                    message(on: known), keys: keys, confirmed: confirmKeyChange, builtOn: nil, progress: uploads)
            }
        } catch {
            store.removeAttachmentFiles(SendPreparation.files(of: pointers, to: contact.id))
            throw error
        }
        let (stored, commit) = (queued.message, queued.commit)
        events.emit(.message(stored))
        // A message the relay took is on the relay's disk: its own copy here is synced in the
        // background. One still queued is on disk before `send` returns.
        let outcome: ChatMessage.Status?
        do {
            outcome = try await drain.deliver(queued, fetched: keys.keys.map { [contact.id: $0] } ?? [:])
        } catch {
            try? await store.syncLog(through: commit)
            throw error
        }
        let wentOut = outcome == .sent
        if wentOut {
            store.syncLogSoon(through: commit)
        } else {
            try await store.syncLog(through: commit)
        }
        if wentOut, stored.attachments.isEmpty {
            // As stored, now sent: not read back (a receipt that moved it on meanwhile has its
            // own event). Attachments are read back: uploading changed them.
            var sent = stored
            sent.status = .sent
            return sent
        }
        return try store.message(id: stored.id, direction: .outgoing) ?? stored
    }

    /// Queues a failed message again and delivers the outbox.
    func retry(_ id: UUID, confirmKeyChange: Bool) async throws -> ChatMessage.Status {
        guard try store.requeue(id, confirmed: confirmKeyChange, now: now()) else {
            throw ConfidantKitError.notRetryable(id)
        }
        events.emit(.delivery(id: id, status: .pending))
        try await drain.deliverOutbox()
        guard let message = try store.message(id: id, direction: .outgoing) else {
            throw ConfidantKitError.notRetryable(id)
        }
        return message.status
    }

    /// Delivers everything waiting in the outbox; returns how many messages went out.
    @discardableResult
    func deliverOutbox() async throws -> Int {
        try await drain.deliverOutbox()
    }

    /// Stops the automatic attempts (the messenger is closing).
    func cancelRetries() async {
        await drain.cancelRetries()
    }
}
