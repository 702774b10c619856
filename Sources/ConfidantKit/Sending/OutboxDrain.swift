import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Delivers the outbox in the order its messages were written, then the queued control messages.
///
/// Its states:
/// - **idle**: a delivery asked for (`deliverOutbox`) starts one.
/// - **draining** (`draining`): one delivery runs. One asked for meanwhile sets `drainAgain`, so
///   the running one reads the outbox again before it ends, and waits — for its own message only
///   (`waitingFor`), or until the delivery ends.
/// - **a window runs** (`handOvers.windowRunning`, while draining over a stream that takes ordered
///   sends): a new message is handed to the window to queue with the others handed over meanwhile,
///   in one transaction (`handOver(_:)`), and goes in the window (`StreamWindow`). Anything the
///   window cannot send plainly goes alone (`SingleDelivery`).
/// - **waiting for the server**: a message met a transient failure; it and everything behind it
///   stay queued, and one retry is scheduled (`retryTask`). A delivery that starts sooner (a
///   reconnect, a new send) makes it moot.
actor OutboxDrain {
    let store: LocalStore
    let stream: StreamSender
    let events: MessengerEvents
    let retry: RetryPolicy
    let now: @Sendable () -> Date
    let diagnostics: DeliveryDiagnostics?
    let sealer: EnvelopeSealer
    private let window: StreamWindow
    private let single: SingleDelivery
    private let controls: ControlDelivery

    private(set) var draining = false
    var drainAgain = false
    /// Callers waiting for the running delivery to end, and those waiting for one message of it
    /// to be through (sent or failed), resumed then or when the delivery ends.
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var messageWaiters: [UUID: [CheckedContinuation<Void, Never>]] = [:]
    /// The messages whose `send` waits for their delivery, and how each went once it is through.
    private var sendsWaiting: Set<UUID> = []
    private var outcomes: [UUID: ChatMessage.Status] = [:]
    /// New messages handed to a running window of sends.
    var handOvers = WindowHandOver()
    /// Messages sealed as they were queued, for the delivery that follows: used once, by the first
    /// attempt to send each; cleared when that delivery ends.
    var presealed: [UUID: Components.Schemas.MessageBatch] = [:]
    /// The progress callback of each send still under way with files, by its message: whichever
    /// delivery uploads them (its own, or a window another send runs) reports to it alone.
    private var uploadProgress: [UUID: @Sendable (AttachmentProgress) -> Void] = [:]
    /// Why the last delivery attempt did not get through, for "queued" messages.
    var lastUnreachable: String?
    private var retryTask: Task<Void, Never>?

    init(
        relay: RelayClient, store: LocalStore, directory: KeyDirectory, cipher: SessionCipher, stream: StreamSender,
        events: MessengerEvents, retry: RetryPolicy, attachments: AttachmentTransfer,
        diagnostics: DeliveryDiagnostics?, now: @escaping @Sendable () -> Date
    ) {
        self.store = store
        self.stream = stream
        self.events = events
        self.retry = retry
        self.now = now
        self.diagnostics = diagnostics
        let sealer = EnvelopeSealer(relay: relay, store: store, directory: directory, cipher: cipher)
        let transport = BatchTransport(relay: relay, store: store, stream: stream, diagnostics: diagnostics)
        let payloads = OutgoingPayloads(store: store, attachments: attachments)
        self.sealer = sealer
        window = StreamWindow(
            store: store, directory: directory, stream: stream, sealer: sealer, payloads: payloads, events: events,
            diagnostics: diagnostics)
        single = SingleDelivery(
            store: store, directory: directory, sealer: sealer, payloads: payloads, transport: transport)
        controls = ControlDelivery(
            store: store, directory: directory, sealer: sealer, transport: transport, retry: retry, now: now)
    }

    /// How one delivery attempt of a message ended.
    enum Delivery: Equatable {
        case sent
        /// Refused for good; the failure is stored with the message.
        case failed(DeliveryFailure)
        /// Not now (server unreachable, busy, briefly unable to store): the message stays queued
        /// until the next attempt.
        case waiting(String, next: Date)
    }

    /// A new message as queued: stored, its commit, and the outbox as it was left (this message
    /// alone) when it was sealed as it was queued.
    typealias QueuedNew = (message: ChatMessage, commit: UInt64, outbox: [LocalStore.QueuedMessage]?)

    /// Stores and queues a new message: sealed in the same transaction when its keys are at hand
    /// and unchanged and nothing else waits (`queueSealed`); handed to the running window when
    /// one runs; else queued in a transaction of its own. ``SendingContexts/Stale`` is thrown, and
    /// nothing written, when `context` changed since it was read.
    func queueNew(
        _ message: LocalStore.NewMessage, keys: SendPreparation.PeerKeys, confirmed: Bool,
        builtOn context: SendingContext?, progress: (@Sendable (AttachmentProgress) -> Void)?
    ) async throws -> QueuedNew {
        // Before it is queued: a window of sends already running may upload its files first.
        if let progress { uploadProgress[message.id] = progress }
        do {
            if let peerKeys = keys.keys, !keys.changed,
                let sealed = try await queueSealed(message, peerKeys: peerKeys, confirmed: confirmed, builtOn: context)
            {
                let outbox = LocalStore.QueuedMessage(justQueued: sealed.message, confirmed: confirmed)
                return (sealed.message, sealed.commit, [outbox])
            }
            if handOvers.windowRunning {
                return try await handOver(
                    LocalStore.NewQueued(message: message, confirmed: confirmed, context: context))
            }
            let queued = try store.queue(message, confirmed: confirmed, builtOn: context, now: message.sentAt)
            return (queued.message, queued.commit, nil)
        } catch {
            uploadProgress[message.id] = nil
            throw error
        }
    }

    /// A new message with nothing to upload, sealed as it is queued while no delivery runs: one
    /// commit instead of one to queue it and one to seal it. Nil (nothing written) when that
    /// does not hold; the message is then queued and delivered the usual way.
    private func queueSealed(
        _ message: LocalStore.NewMessage, peerKeys: [PublicIdentity], confirmed: Bool, builtOn context: SendingContext?
    ) async throws -> (message: ChatMessage, commit: UInt64)? {
        guard !draining, message.attachments.isEmpty, !peerKeys.isEmpty, let text = message.text,
            let payload = try? OutgoingPayloads.payloads(
                peer: message.peer, text: text, pointers: [],
                expiresAfter: message.expiresAt.map { OutgoingPayloads.expiresAfter($0, sentAt: message.sentAt) },
                replyTo: message.reply
            ).peer,
            let groups = try? await sealer.groups(
                peer: message.peer, peerKeys: peerKeys, forPeer: payload, forOwn: payload),
            !draining  // looked at again: a delivery may have started while the keys were read
        else { return nil }
        guard let queued = try sealer.queueSealed(message, groups: groups, confirmed: confirmed, builtOn: context)
        else { return nil }
        presealed[message.id] = queued.batch
        return (queued.message, queued.commit)
    }

    /// Delivers the outbox through a new message and answers how that message went: nil when it
    /// is not through (it waits for the server, or another delivery holds it).
    /// - Parameters:
    ///   - fetched: the peer's devices as just fetched.
    ///   - queued: the message as `queueNew` left it.
    func deliver(_ queued: QueuedNew, fetched: [UUID: [PublicIdentity]]) async throws -> ChatMessage.Status? {
        let id = queued.message.id
        sendsWaiting.insert(id)
        defer {
            sendsWaiting.remove(id)
            uploadProgress[id] = nil
        }
        try await deliverOutbox(fetched: fetched, waitingFor: id, known: queued.outbox)
        return outcomes.removeValue(forKey: id)
    }

    /// Delivers everything waiting in the outbox, oldest first, then the queued control messages;
    /// returns how many messages went out. Stops at the first message the server cannot take now,
    /// so nothing overtakes it. A caller that finds a delivery running waits for it to finish, or
    /// with `waitingFor`, only until that message is through.
    /// - Parameter known: the outbox as the caller just wrote it, for the first look instead of a
    ///   read. What another process on the profile queues meanwhile, that process delivers.
    @discardableResult
    func deliverOutbox(
        fetched: [UUID: [PublicIdentity]] = [:], waitingFor message: UUID? = nil,
        known: [LocalStore.QueuedMessage]? = nil
    ) async throws -> Int {
        guard !draining else {
            drainAgain = true
            handOvers.queuedOutsideWindow = true
            // A window waiting for its oldest answer takes this message at once if it has room.
            await stream.nudge()
            await withCheckedContinuation { continuation in
                if let message {
                    messageWaiters[message, default: []].append(continuation)
                } else {
                    waiters.append(continuation)
                }
            }
            return 0
        }
        draining = true
        defer {
            draining = false
            presealed = [:]
            let waiting = waiters + messageWaiters.values.joined()
            waiters = []
            messageWaiters = [:]
            for waiter in waiting { waiter.resume() }
        }
        var sent = 0
        var fetched = fetched
        var known = known
        repeat {
            drainAgain = false
            var queue = try (known ?? store.outbox())[...]
            known = nil
            while let queued = queue.first {
                // A stream that takes ordered sends: a window of them at once.
                if await stream.sendsOrdered {
                    sent += try await window.deliver(&queue, fetched: &fetched, drain: self)
                    guard let first = queue.first, first.message.id == queued.message.id else { continue }
                }
                queue.removeFirst()
                let peerKeys = fetched.removeValue(forKey: queued.message.peer)
                switch try await single.deliver(queued, peerKeys: peerKeys, drain: self) {
                case .sent: sent += 1
                case .failed: continue
                case .waiting(let reason, let next):
                    lastUnreachable = reason
                    try store.deferDelivery(of: queued.message.id, until: next, reason: reason)
                    events.emit(.changed)
                    scheduleRetry(at: next)
                    return sent
                }
            }
            if let waiting = try await controls.deliver() {
                lastUnreachable = waiting.reason
                scheduleRetry(at: waiting.next)
                return sent
            }
        } while drainAgain
        return sent
    }

    /// The next attempt after `attempts` failures, by the retry policy.
    func nextAttempt(after attempts: Int) -> Date {
        retry.nextAttempt(after: attempts + 1, now: now())
    }

    /// Tries the outbox again by itself at `date`: a message waits for the server without anyone
    /// resending it. One attempt is scheduled at a time.
    private func scheduleRetry(at date: Date) {
        retryTask?.cancel()
        let delay = max(0, date.timeIntervalSince(now()))
        let sleep = retry.sleep
        retryTask = Task { [weak self] in
            do { try await sleep(.milliseconds(Int(delay * 1000))) } catch { return }
            guard !Task.isCancelled else { return }
            _ = try? await self?.deliverOutbox()
        }
    }

    /// Stops the automatic attempts (the messenger is closing).
    func cancelRetries() {
        retryTask?.cancel()
        retryTask = nil
    }

    /// The upload progress callback of a send under way, for whichever delivery uploads its files.
    func progress(of message: UUID) -> (@Sendable (AttachmentProgress) -> Void)? {
        uploadProgress[message]
    }

    /// Records how a message went, tells the screens, and frees whoever waits for it.
    func finish(_ id: UUID, _ delivery: Delivery) throws -> Delivery {
        switch delivery {
        case .sent:
            try store.finish([id], failure: nil)
            events.emit(.delivery(id: id, status: .sent))
            through(id, .sent)
        case .failed(let failure):
            try store.finish([id], failure: failure)
            events.emit(.delivery(id: id, status: .failed(failure)))
            through(id, .failed(failure))
        case .waiting:
            break
        }
        return delivery
    }

    /// The message is sent or failed: its sender need not wait for the rest of the delivery.
    func through(_ id: UUID, _ status: ChatMessage.Status) {
        if sendsWaiting.contains(id) { outcomes[id] = status }
        for waiter in messageWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
    }
}
