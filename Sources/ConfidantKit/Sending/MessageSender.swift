import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Sending: a message is stored and queued in the outbox first (its attachments encrypted into
/// this device's attachment folder), then the outbox is delivered in the order messages were
/// written — attachments uploaded and granted to the peer, the message sealed once per recipient
/// device (and once per own other device) in one store transaction, then sent over the live
/// stream when connected, over HTTP otherwise — and after the messages, the queued control
/// messages (receipts, edits, deletions, timers). Several messages waiting go over the stream as a
/// window of ordered sends (`deliverWindow`). The relay deduplicates on the message id, so a
/// retry never stores twice.
actor MessageSender {
    /// How one delivery attempt ended.
    enum Delivery: Equatable {
        case sent
        /// Refused for good; the reason is stored with the message.
        case failed(String)
        /// Not now (server unreachable, busy, briefly unable to store): the message stays queued
        /// until the next attempt.
        case waiting(String, next: Date)
    }

    let relay: RelayClient
    let store: LocalStore
    let directory: KeyDirectory
    let cipher: SessionCipher
    let stream: StreamSender
    let events: MessengerEvents
    let retry: RetryPolicy
    let attachments: AttachmentTransfer
    let now: @Sendable () -> Date
    private var draining = false
    private var drainAgain = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Senders waiting for one message of a running delivery: resumed when it is through (sent
    /// or failed), or when the delivery ends.
    private var messageWaiters: [UUID: [CheckedContinuation<Void, Never>]] = [:]
    /// The messages whose `send` waits for their delivery, and how each went once it is through.
    private var sendsWaiting: Set<UUID> = []
    private var outcomes: [UUID: ChatMessage.Status] = [:]
    /// Whether a window of sends runs (`deliverWindow`): a new message is then handed to it to
    /// queue (`handOver`) instead of queued in a transaction of its own.
    private var windowRunning = false
    /// New messages handed to the running window, not yet queued, in the order handed over.
    private var handedOver: [LocalStore.NewQueued] = []
    /// Whether the outbox may hold messages this process queued that a running window has not
    /// read: set by a delivery asked for while one runs (its caller queued the message itself).
    /// While it is not set, all that is new is what was handed over, which the window takes
    /// without reading the outbox.
    private var queuedOutsideWindow = true
    /// How queueing went for a message handed over, kept until its sender asks
    /// (`handOverResults`), or given to the sender already waiting (`handOverWaiters`).
    private var handOverResults: [UUID: Result<QueuedNew, any Error>] = [:]
    private var handOverWaiters: [UUID: CheckedContinuation<QueuedNew, any Error>] = [:]
    /// Why the last delivery attempt did not get through, for "queued" messages.
    var lastUnreachable: String?
    /// The progress callback of each send still under way with files, by its message: whichever
    /// delivery uploads them (its own, or a window another send runs) reports to it alone.
    private var uploadProgress: [UUID: @Sendable (AttachmentProgress) -> Void] = [:]

    /// How a batch reached the relay.
    enum Transport: Equatable { case stream, http }
    /// How each message delivered by this instance went, for tests and diagnostics.
    var transports: [Transport] = []
    /// How many of them went in a window of ordered sends (`deliverWindow`).
    var sentInWindows = 0
    /// How many new messages a window queued for their senders (`queueHandedOver`).
    var queuedByWindows = 0
    /// New messages handed over and not yet queued, and whether a window runs, for tests.
    var handedOverCount: Int { handedOver.count }
    var isWindowRunning: Bool { windowRunning }

    init(
        relay: RelayClient, store: LocalStore, directory: KeyDirectory, cipher: SessionCipher, stream: StreamSender,
        events: MessengerEvents, retry: RetryPolicy, attachments: AttachmentTransfer,
        now: @escaping @Sendable () -> Date
    ) {
        self.relay = relay
        self.store = store
        self.directory = directory
        self.cipher = cipher
        self.stream = stream
        self.events = events
        self.retry = retry
        self.attachments = attachments
        self.now = now
    }

    var me: UUID { cipher.userID }

    /// Stores the message (its files encrypted first), queues it, and delivers the outbox up to
    /// it. When the server cannot take it now the message stays `pending` and goes, in order,
    /// with the next delivery.
    func send(
        _ text: String?, attachments sources: [AttachmentSource], to contact: Contact, confirmKeyChange: Bool,
        progress: @escaping @Sendable (AttachmentProgress) -> Void
    ) async throws -> ChatMessage {
        let text = text.flatMap { $0.isEmpty ? nil : $0 }
        let bytes = text?.utf8.count ?? 0
        guard bytes > 0 || !sources.isEmpty else { throw ConfidantKitError.emptyMessage }
        guard bytes <= ChatPayload.maximumTextBytes else {
            throw ConfidantKitError.messageTooLarge(bytes: bytes, limit: ChatPayload.maximumTextBytes)
        }
        guard sources.count <= ChatPayload.maximumAttachments else {
            throw ConfidantKitError.messageTooLarge(bytes: sources.count, limit: ChatPayload.maximumAttachments)
        }
        try await checkSizes(sources)
        // The context as last read (`SendingContexts`): the transaction that queues the message
        // refuses it if a contact or timer changed since, and the context is read afresh.
        var known = try context(for: contact)
        var (peerKeys, keysChanged) = try await checkKeys(of: contact, known, confirmKeyChange: confirmKeyChange)
        var pointers: [AttachmentPointer] = []
        do {
            for source in sources { pointers.append(try attachments.prepare(source, progress: progress)) }
        } catch {
            store.removeAttachmentFiles(pointers.map(\.id))
            throw error
        }
        let sentAt = now()
        let id = UUID.timeOrdered(at: sentAt)
        // Before it is queued: a window of sends already running may upload its files before
        // this send goes on.
        if !sources.isEmpty { uploadProgress[id] = progress }
        defer { uploadProgress[id] = nil }
        let prepared = pointers
        func message(on context: SendingContext) -> LocalStore.NewMessage {
            LocalStore.NewMessage(
                id: id, peer: contact.id, direction: .outgoing, senderDevice: cipher.identity.deviceID,
                sentAt: sentAt, text: text, unreadableReason: nil, state: .pending, attachments: prepared,
                expiresAt: context.timer.map { sentAt.addingTimeInterval(TimeInterval($0)) })
        }
        let queued: QueuedNew
        do {
            var checked: QueuedNew?
            for _ in 1..<Self.contextAttempts where checked == nil {
                do {
                    checked = try await queueNew(
                        message(on: known), peerKeys: peerKeys, keysChanged: keysChanged,
                        confirmed: confirmKeyChange, builtOn: known)
                } catch is SendingContexts.Stale {
                    known = try context(for: contact, fresh: true)
                    (peerKeys, keysChanged) = try await checkKeys(
                        of: contact, known, confirmKeyChange: confirmKeyChange)
                }
            }
            // The last attempt goes on the context it has just read, unchecked, as every send did
            // before contexts were kept: another process writing all the while does not hold the
            // message up.
            if let checked {
                queued = checked
            } else {
                queued = try await queueNew(
                    message(on: known), peerKeys: peerKeys, keysChanged: keysChanged, confirmed: confirmKeyChange,
                    builtOn: nil)
            }
        } catch {
            store.removeAttachmentFiles(pointers.map(\.id))
            throw error
        }
        let (stored, commit) = (queued.message, queued.commit)
        events.emit(.message(stored))
        sendsWaiting.insert(stored.id)
        defer {
            sendsWaiting.remove(stored.id)
            outcomes[stored.id] = nil
        }
        // Its sealing did not wait for the disk when its sessions had reserved its message
        // numbers (docs/PROTOCOL.md §9.6). A message the relay took is on the relay's disk: its
        // own copy here is synced in the background. One still queued is on disk before `send`
        // returns.
        do {
            try await deliverOutbox(
                fetched: peerKeys.map { [contact.id: $0] } ?? [:], waitingFor: stored.id, known: queued.outbox)
        } catch {
            try? await store.syncLog(through: commit)
            throw error
        }
        let wentOut = outcomes[stored.id] == .sent
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

    /// A new message as queued: stored, its commit, and the outbox as `queueSealed` left it (this
    /// message alone) when it was sealed as it was queued.
    typealias QueuedNew = (message: ChatMessage, commit: UInt64, outbox: [LocalStore.QueuedMessage]?)

    /// Stores and queues a new message: sealed in the same transaction when its keys are at hand
    /// and unchanged (`queueSealed`), else queued for the delivery to seal. `context`: what the
    /// message was built on; ``SendingContexts/Stale`` is thrown, and nothing written, when it
    /// changed since it was read.
    private func queueNew(
        _ message: LocalStore.NewMessage, peerKeys: [PublicIdentity]?, keysChanged: Bool, confirmed: Bool,
        builtOn context: SendingContext?
    ) async throws -> QueuedNew {
        if let peerKeys, !keysChanged,
            let sealed = try await queueSealed(message, peerKeys: peerKeys, confirmed: confirmed, builtOn: context)
        {
            let outbox = LocalStore.QueuedMessage(justQueued: sealed.message, confirmed: confirmed)
            return (sealed.message, sealed.commit, [outbox])
        }
        if windowRunning {
            return try await handOver(LocalStore.NewQueued(message: message, confirmed: confirmed, context: context))
        }
        let queued = try store.queue(message, confirmed: confirmed, builtOn: context, now: message.sentAt)
        return (queued.message, queued.commit, nil)
    }

    /// Queues a new message through the running window of sends, with the others handed over
    /// meanwhile, in one transaction (`queueHandedOver`), instead of in one of its own: with 8
    /// callers those commits were a sixth of both clients' CPU (perf, docs/BENCHMARKS.md). It
    /// comes back as `store.queue` would have: stored and queued, or refused with
    /// ``SendingContexts/Stale`` or the store's error, nothing written for it.
    func handOver(_ new: LocalStore.NewQueued) async throws -> QueuedNew {
        let id = new.message.id
        handedOver.append(new)
        drainAgain = true
        // A window waiting for its oldest answer queues it at once if it has room; else at its
        // next refill, or as it ends.
        await stream.nudge()
        if let settled = handOverResults.removeValue(forKey: id) { return try settled.get() }
        return try await withCheckedThrowingContinuation { handOverWaiters[id] = $0 }
    }

    /// Queues the messages handed over (`handOver`), in one transaction, and answers their
    /// senders. Returns those queued, as the outbox has them, in order.
    @discardableResult
    func queueHandedOver() -> [LocalStore.QueuedMessage] {
        guard !handedOver.isEmpty else { return [] }
        let taken = handedOver
        handedOver = []
        var queued: [LocalStore.QueuedMessage] = []
        let results: [Result<QueuedNew, any Error>]
        do {
            let (stored, commit) = try store.queue(taken)
            results = zip(taken, stored).map { new, stored in
                guard let stored else { return .failure(SendingContexts.Stale()) }
                queued.append(LocalStore.QueuedMessage(justQueued: stored, confirmed: new.confirmed))
                return .success((stored, commit, nil))
            }
        } catch {
            results = taken.map { _ in .failure(error) }
        }
        queuedByWindows += queued.count
        for (new, result) in zip(taken, results) {
            if let waiter = handOverWaiters.removeValue(forKey: new.message.id) {
                waiter.resume(with: result)
            } else {
                handOverResults[new.message.id] = result
            }
        }
        return queued
    }

    /// How many times a send reads its context before it goes on the last one read unchecked.
    static let contextAttempts = 3

    /// The store's context for sending to `contact`, with the contact stored as the caller has it.
    private func context(for contact: Contact, fresh: Bool = false) throws -> SendingContext {
        let known = try store.sendingContext(for: contact.id, fresh: fresh)
        guard known.contact != contact else { return known }
        try store.replaceContact(contact)
        // Read again: the change made the one read stale.
        return try store.sendingContext(for: contact.id, fresh: true)
    }

    /// The peer's keys for sending, and whether they changed since the user verified them (a
    /// change not confirmed throws). Keys not at hand (the server unreachable) are nil: the
    /// message is queued, and the outbox delivers it later.
    private func checkKeys(of contact: Contact, _ known: SendingContext, confirmKeyChange: Bool) async throws -> (
        keys: [PublicIdentity]?, changed: Bool
    ) {
        do {
            let keys = try await directory.keysForSending(of: contact.id)
            let changed = try directory.keysChanged(of: contact.id, verifiedDigest: known.verifiedDigest)
            if changed, !confirmKeyChange {
                throw ConfidantKitError.keyChangedSinceVerification(name: contact.displayName)
            }
            return (keys, changed)
        } catch let error as ConfidantKitError where error.isTransient {
            // Queue it; the outbox delivers when the server is back.
            return (nil, true)  // whether they changed is not known until the keys are at hand
        }
    }

    /// The server's attachment limit, asked once: a file over it is refused before it is encrypted.
    private var blobLimit: Int?

    private func checkSizes(_ sources: [AttachmentSource]) async throws {
        guard !sources.isEmpty else { return }
        if blobLimit == nil, case .ok(let ok)? = try? await relay.call({ try await $0.health() }),
            let limit = try? ok.body.json.maximumBlobBytes
        {
            blobLimit = Int(limit)
        }
        for source in sources {
            let size = (try? FileManager.default.attributesOfItem(atPath: source.url.path)[.size] as? Int) ?? nil
            guard let size else { throw ConfidantKitError.attachmentUnreadable(source.url.path) }
            if let limit = blobLimit, MediaStreamSize.encrypted(size) > limit {
                throw ConfidantKitError.attachmentTooLarge(
                    name: source.url.lastPathComponent, bytes: size, limit: MediaStreamSize.plaintext(limit))
            }
        }
    }

    /// Messages sealed as they were queued (`queueSealed`), for the delivery that follows: used
    /// once, by the first attempt to send each; cleared when that delivery ends.
    private var presealed: [UUID: Components.Schemas.MessageBatch] = [:]

    /// A new message with nothing to upload, for keys at hand and sessions with every device,
    /// while no delivery runs and the outbox is empty: stored, queued and sealed in one store
    /// transaction (one commit instead of one to queue it and a synced one to seal it; synced
    /// at once only when the sealing reserved message numbers), its batch kept for the delivery
    /// that follows at once. Nil when any of that does not hold (then nothing was written): the
    /// message is queued and delivered the usual way.
    /// - Parameter context: what `message` was built on; ``SendingContexts/Stale`` is thrown, and
    ///   nothing written, when it changed since it was read.
    private func queueSealed(
        _ message: LocalStore.NewMessage, peerKeys: [PublicIdentity], confirmed: Bool, builtOn context: SendingContext?
    ) async throws -> (message: ChatMessage, commit: UInt64)? {
        guard !draining, message.attachments.isEmpty, !peerKeys.isEmpty, let text = message.text,
            let payload = try? Self.payloads(
                peer: message.peer, text: text, pointers: [],
                expiresAfter: message.expiresAt.map { Self.expiresAfter($0, sentAt: message.sentAt) }
            ).peer,
            let groups = try? await recipientGroups(
                peer: message.peer, peerKeys: peerKeys, forPeer: payload, forOwn: payload),
            !draining  // looked at again: a delivery may have started while the keys were read
        else { return nil }
        let recipients = groups.flatMap(\.recipients)
        // Any failure here (a damaged session, a full disk) leaves the usual path to meet it and
        // say so the usual way.
        let queued: (message: ChatMessage, sealed: [Data], commit: UInt64)?
        do {
            queued = try store.queueSealed(
                message, confirmed: confirmed, builtOn: context, now: message.sentAt,
                seal: { transaction -> [Data]? in
                    guard try !recipients.contains(where: { try cipher.needsBundle($0, sessions: transaction) }) else {
                        return nil
                    }
                    return try sealedEnvelopes(
                        groups, messageID: message.id, sentAt: message.sentAt, bundles: [:], in: transaction)
                })
        } catch let stale as SendingContexts.Stale {
            throw stale
        } catch {
            return nil
        }
        guard let queued else { return nil }
        presealed[message.id] = Self.batch(message.id, recipients: recipients, envelopes: queued.sealed)
        return (queued.message, queued.commit)
    }

    /// Delivers everything waiting in the outbox, oldest first, then the queued control
    /// messages; returns how many messages went out. Stops at the first message the server cannot
    /// take now, so nothing overtakes it. A delivery asked for while another runs makes that one
    /// look at the outbox again instead of leaving a message queued meanwhile behind.
    /// A caller that finds a delivery running waits for it to finish (so that `flushOutbox`
    /// returns only when what it queued went, or is waiting for the server), or with
    /// `waitingFor`, only until that message is through: a sender goes on to its next message
    /// while the delivery goes on, and the delivery takes it into its window (`deliverWindow`).
    /// - Parameter known: the outbox as the caller just wrote it, for the first look instead of
    ///   a read (`send` after `queueSealed`, which found it empty and added one message). What
    ///   another process on the profile queues meanwhile, that process delivers.
    @discardableResult
    func deliverOutbox(
        fetched: [UUID: [PublicIdentity]] = [:], waitingFor message: UUID? = nil,
        known: [LocalStore.QueuedMessage]? = nil
    ) async throws -> Int {
        guard !draining else {
            drainAgain = true
            queuedOutsideWindow = true
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
                // A stream that takes ordered sends: a window of them at once (one, or as many as
                // wait, and those queued while it is on its way).
                if await stream.sendsOrdered {
                    sent += try await deliverWindow(&queue, fetched: &fetched)
                    guard let first = queue.first, first.message.id == queued.message.id else { continue }
                }
                queue.removeFirst()
                switch try await deliver(queued, peerKeys: fetched.removeValue(forKey: queued.message.peer)) {
                case .sent: sent += 1
                case .failed: continue
                case .waiting(_, let next):
                    scheduleRetry(at: next)
                    return sent
                }
            }
            if let next = try await deliverControls() {
                scheduleRetry(at: next)
                return sent
            }
        } while drainAgain
        return sent
    }

    private var retryTask: Task<Void, Never>?

    /// Tries the outbox again by itself at `date` (exponential back-off with jitter, as the
    /// deferral chose it): a message waits for the server without anyone resending it. One
    /// attempt is scheduled at a time; a delivery that starts sooner (a reconnect, a new send)
    /// makes it moot.
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

    /// Queues a failed message again and delivers the outbox.
    func retry(_ id: UUID, confirmKeyChange: Bool) async throws -> ChatMessage.Status {
        guard try store.requeue(id, confirmed: confirmKeyChange, now: now()) else {
            throw ConfidantKitError.notRetryable(id)
        }
        events.emit(.delivery(id: id, status: .pending))
        try await deliverOutbox()
        guard let message = try store.message(id: id, direction: .outgoing) else {
            throw ConfidantKitError.notRetryable(id)
        }
        return message.status
    }

    // MARK: A window of messages

    /// How many messages the outbox has on their way before it waits for the first receipt.
    static let window = 16

    /// Sends messages from the front of `queue` without waiting for each one's receipt, up to
    /// `window` at a time, each naming the one before it (docs/PROTOCOL.md §7.2), and takes off
    /// the queue those the relay stored. It stops at the first message that does not go plainly
    /// — one it cannot seal with what it has, a refusal, a dropped connection — and leaves it and
    /// everything after it queued for `deliver`, one at a time, which handles each case as ever:
    /// the relay refused whatever was sent after a refused message, so nothing overtook it.
    /// - Returns: how many went.
    private func deliverWindow(
        _ queue: inout ArraySlice<LocalStore.QueuedMessage>, fetched: inout [UUID: [PublicIdentity]]
    ) async throws -> Int {
        windowRunning = true
        defer {
            windowRunning = false
            // Handed over since the last refill: queued now, for the delivery to take next.
            if !queueHandedOver().isEmpty { drainAgain = true }
        }
        var inFlight: [(id: UUID, key: String)] = []
        // Whether each peer's keys changed since they were verified, read once for the window.
        var keysChanged: [UUID: Bool] = [:]
        var filling = true
        var sent = 0
        while true {
            // The free places filled: what each message needs gathered first, then all sealed in
            // one store transaction (one commit for the lot, synced at once only when it
            // reserved message numbers), then sent in order.
            var ready: [PlainMessage] = []
            if filling, drainAgain, inFlight.count + ready.count >= queue.count {
                // Messages queued since the outbox was read (their senders wait for them): into
                // this window, after those already in it.
                drainAgain = false
                let handed = queueHandedOver()
                if queuedOutsideWindow {
                    queue.append(
                        contentsOf: try store.outbox(
                            excluding: Set(queue.map(\.message.id)),
                            reusing: Dictionary(handed.map { ($0.message.id, $0) }, uniquingKeysWith: { $1 })))
                    queuedOutsideWindow = false
                } else {
                    // Nothing else was queued here since the outbox was read: what was handed
                    // over is all that is new, and last in the outbox's order.
                    queue.append(contentsOf: handed)
                }
            }
            while filling, inFlight.count + ready.count < Self.window, inFlight.count + ready.count < queue.count {
                let queued = queue[queue.startIndex + inFlight.count + ready.count]
                if ready.isEmpty, let batch = presealed.removeValue(forKey: queued.message.id) {
                    // Sealed as it was queued: it goes as it is.
                    try await syncBeforeSending(inFlight: inFlight)
                    guard let key = try? await stream.start(batch, after: inFlight.last?.id) else {
                        filling = false
                        break
                    }
                    inFlight.append((queued.message.id, key))
                    continue
                }
                guard
                    let plain = await plainMessage(
                        queued, peerKeys: fetched.removeValue(forKey: queued.message.peer), keysChanged: &keysChanged)
                else {
                    filling = false
                    break
                }
                ready.append(plain)
            }
            let batches = sealTogether(ready)
            if batches.count < ready.count { filling = false }
            if !batches.isEmpty { try await syncBeforeSending(inFlight: inFlight) }
            for (plain, batch) in zip(ready, batches) {
                guard let key = try? await stream.start(batch, after: inFlight.last?.id) else {
                    filling = false
                    break
                }
                inFlight.append((plain.id, key))
            }
            guard let oldest = inFlight.first else { return sent }
            // The oldest's answer, then those that came with it: finished in one transaction.
            // While the window has room, a message queued meanwhile (its sender waits for it)
            // goes at once instead of after that answer.
            var stored: [UUID] = []
            var refusal: (any Error)?
            do {
                if filling, inFlight.count < Self.window {
                    if drainAgain { continue }
                    guard try await stream.answerOrNudge(oldest.key) != nil else { continue }
                } else {
                    _ = try await stream.answer(oldest.key)
                }
                stored.append(oldest.id)
                for next in inFlight.dropFirst() {
                    guard let answer = await stream.answerIfArrived(next.key) else { break }
                    do {
                        _ = try answer.get()
                        stored.append(next.id)
                    } catch {
                        refusal = error
                        break
                    }
                }
            } catch {
                refusal = error
            }
            if !stored.isEmpty {
                do {
                    try store.finish(stored, failure: nil)
                } catch {
                    // Leave no answer behind that nobody will ask for.
                    for rest in inFlight.dropFirst(stored.count) { _ = try? await stream.answer(rest.key) }
                    throw error
                }
                for id in stored {
                    transports.append(.stream)
                    events.emit(.delivery(id: id, status: .sent))
                    through(id, .sent)
                }
                queue.removeFirst(stored.count)
                inFlight.removeFirst(stored.count)
                sent += stored.count
                sentInWindows += stored.count
            }
            guard let refusal else { continue }
            // The rest were refused after it (or their answers were lost with the connection):
            // they stay queued and go again, in order; a retry of one the relay did store is
            // answered as a duplicate.
            for rest in inFlight.dropFirst() { _ = try? await stream.answer(rest.key) }
            if case ConfidantKitError.server(_, .deviceMismatch, _) = refusal, let first = queue.first {
                // Its devices changed: `deliver` fetches them afresh on its first attempt.
                directory.devicesChanged(of: first.message.peer)
                directory.devicesChanged(of: me)
            }
            return sent
        }
    }

    /// `LocalStore.syncBeforeSending` for a window; if the log cannot be synced, the answers of
    /// the sends on their way are taken first, so that none is left behind that nobody will ask for.
    private func syncBeforeSending(inFlight: [(id: UUID, key: String)]) async throws {
        do {
            try await store.syncBeforeSending()
        } catch {
            for sent in inFlight { _ = try? await stream.answer(sent.key) }
            throw error
        }
    }

    /// A message of a window with what sealing it takes: its payloads and their devices.
    private struct PlainMessage {
        let id: UUID
        let sentAt: Date
        let groups: [(payload: Data, recipients: [SessionCipher.Recipient])]
    }

    /// What sealing the message for its peer's and this account's other devices takes, with the
    /// keys at hand; nil when anything else is needed (a held key change, no device, an error):
    /// `deliver` sees to those.
    private func plainMessage(
        _ queued: LocalStore.QueuedMessage, peerKeys fetched: [PublicIdentity]?, keysChanged: inout [UUID: Bool]
    ) async -> PlainMessage? {
        let message = queued.message
        do {
            let peerKeys: [PublicIdentity]
            if let fetched {
                peerKeys = fetched
            } else {
                peerKeys = try await directory.keysForSending(of: message.peer)
            }
            let changed = try keysChanged[message.peer] ?? directory.keysChangedSinceVerification(message.peer)
            keysChanged[message.peer] = changed
            guard !peerKeys.isEmpty, !changed else { return nil }
            let (forPeer, forOwn) = try await payloads(of: message, hasAttachments: queued.hasAttachments)
            return PlainMessage(
                id: message.id, sentAt: message.sentAt,
                groups: try await recipientGroups(
                    peer: message.peer, peerKeys: peerKeys, forPeer: forPeer, forOwn: forOwn))
        } catch {
            return nil
        }
    }

    /// The messages sealed in one store transaction, in order, up to the first that needs
    /// anything else (a device without a session needs a prekey bundle, which `deliver` claims)
    /// or fails: the batches of those before it.
    private func sealTogether(_ messages: [PlainMessage]) -> [Components.Schemas.MessageBatch] {
        guard !messages.isEmpty else { return [] }
        return
            (try? store.transaction(store.sealing) { transaction -> [Components.Schemas.MessageBatch] in
                var batches: [Components.Schemas.MessageBatch] = []
                for message in messages {
                    let recipients = message.groups.flatMap(\.recipients)
                    guard try !recipients.contains(where: { try cipher.needsBundle($0, sessions: transaction) }) else {
                        break
                    }
                    let envelopes = try sealedEnvelopes(
                        message.groups, messageID: message.id, sentAt: message.sentAt, bundles: [:], in: transaction)
                    batches.append(Self.batch(message.id, recipients: recipients, envelopes: envelopes))
                }
                return batches
            }) ?? []
    }

    /// Each payload sealed for its devices, in order, in `transaction`.
    private func sealedEnvelopes(
        _ groups: [(payload: Data, recipients: [SessionCipher.Recipient])], messageID: UUID, sentAt: Date,
        bundles: [DeviceAddress: SessionCipher.Bundle], in transaction: StoreTransaction
    ) throws -> [Data] {
        try groups.flatMap { group in
            try cipher.seal(
                group.payload, messageID: messageID, sentAt: sentAt, for: group.recipients, bundles: bundles,
                sessions: transaction)
        }
    }

    static func batch(_ messageID: UUID, recipients: [SessionCipher.Recipient], envelopes: [Data])
        -> Components.Schemas.MessageBatch
    {
        Components.Schemas.MessageBatch(
            messageId: messageID.canonicalString,
            envelopes: zip(recipients, envelopes).map {
                .init(
                    recipientUserId: $0.user.canonicalString, recipientDeviceId: $0.identity.deviceID.canonicalString,
                    envelope: .init($1))
            })
    }

    // MARK: One message

    /// - Parameter peerKeys: the peer's devices as just fetched, if they were; fetched otherwise
    ///   (and again after a `device_mismatch`).
    private func deliver(_ queued: LocalStore.QueuedMessage, peerKeys fetched: [PublicIdentity]?) async throws
        -> Delivery
    {
        let message = queued.message
        do {
            var fetched = fetched
            for attempt in 0..<2 {
                if attempt == 0, let batch = presealed.removeValue(forKey: message.id) {
                    // Sealed as it was queued, for keys checked then.
                    fetched = nil
                    do {
                        try await transmit(batch)
                        return try finish(message.id, .sent)
                    } catch ConfidantKitError.server(_, .deviceMismatch, _) {
                        continue  // fetched afresh and sealed again below
                    }
                }
                let peerKeys: [PublicIdentity]
                if let keys = fetched {
                    peerKeys = keys
                } else if attempt == 0 {
                    peerKeys = try await directory.keysForSending(of: message.peer)
                } else {
                    peerKeys = try await directory.refreshKeys(of: message.peer)
                }
                fetched = nil
                if try directory.keysChangedSinceVerification(message.peer) {
                    guard queued.confirmed else {
                        let name = try store.contact(id: message.peer)?.displayName ?? "the recipient"
                        return try finish(
                            message.id,
                            .failed(
                                "held: \(name)'s security key changed after you verified it; compare safety numbers, then retry"
                            ))
                    }
                    try directory.acceptChangedKeys(of: message.peer)
                }
                guard !peerKeys.isEmpty else {
                    return try finish(message.id, .failed("the recipient has no signed-in device yet"))
                }
                let (forPeer, forOwn) = try await payloads(of: message, hasAttachments: queued.hasAttachments)
                let batch = try await seal(
                    try await recipientGroups(
                        peer: message.peer, peerKeys: peerKeys, forPeer: forPeer, forOwn: forOwn,
                        refreshingOwn: attempt > 0),
                    messageID: message.id, sentAt: message.sentAt)
                do {
                    try await transmit(batch)
                    return try finish(message.id, .sent)
                } catch ConfidantKitError.server(_, .deviceMismatch, _) where attempt == 0 {
                    // A device appeared or went between fetching keys and sending: fetch again once.
                    continue
                }
            }
            return try finish(message.id, .failed("the recipient's devices kept changing; retry later"))
        } catch let error as ConfidantKitError where error.isTransient {
            lastUnreachable = error.description
            let next = retry.nextAttempt(after: queued.attempts + 1, now: now())
            try store.deferDelivery(of: message.id, until: next, reason: error.description)
            events.emit(.changed)
            return .waiting(error.description, next: next)
        } catch let error as ConfidantKitError {
            switch error {
            case .sessionExpired, .untrustedPrekeys, .storeDamaged: throw error
            default: return try finish(message.id, .failed(error.description))
            }
        }
    }

    /// What the peer's devices and this account's other devices get: a plain text message as
    /// kind 1; with attachments (uploaded and granted to the peer here, once) or a timer, kind 2,
    /// the peer's copy with the capabilities, the own copy without (its owner fetches freely).
    private func payloads(of message: ChatMessage, hasAttachments: Bool) async throws -> (peer: Data, own: Data) {
        var pointers =
            hasAttachments
            ? try store.read { db in
                try store.attachments(of: message.id, peer: message.peer, direction: .outgoing, db)
            } : []
        let expiresAfter = message.expiresAt.map { Self.expiresAfter($0, sentAt: message.sentAt) }
        let progress = uploadProgress[message.id]
        for index in pointers.indices {
            let before = pointers[index]
            if pointers[index].blobID == nil {
                pointers[index] = try await attachments.upload(pointers[index]) { progress?($0) }
            }
            if pointers[index].capability == nil, let blob = pointers[index].blobID {
                pointers[index].capability = try await attachments.grant(blob, to: message.peer)
            }
            if pointers[index] != before {
                let updated = pointers[index]
                try store.write { db in
                    try store.updateAttachment(
                        updated, message: message.id, peer: message.peer, direction: .outgoing, db)
                }
            }
        }
        return try Self.payloads(peer: message.peer, text: message.text, pointers: pointers, expiresAfter: expiresAfter)
    }

    static func expiresAfter(_ expiresAt: Date, sentAt: Date) -> Int {
        Int(expiresAt.timeIntervalSince(sentAt).rounded())
    }

    /// The payloads of a message whose attachments are uploaded and granted (`pointers`): kind 1
    /// for plain text, kind 2 otherwise, the own devices' copy without the capabilities.
    static func payloads(peer: UUID, text: String?, pointers: [AttachmentPointer], expiresAfter: Int?) throws -> (
        peer: Data, own: Data
    ) {
        guard !pointers.isEmpty || expiresAfter != nil else {
            guard let text else { throw ConfidantKitError.storeDamaged("the message is missing from the local store") }
            let payload = try ChatPayload(conversation: peer, text: text).serialized
            return (payload, payload)
        }
        let own = pointers.map { pointer -> AttachmentPointer in
            var copy = pointer
            copy.capability = nil
            return copy
        }
        return (
            try ChatPayload(
                conversation: peer,
                content: .message(RichMessage(text: text, attachments: pointers, expiresAfter: expiresAfter))
            ).serialized,
            try ChatPayload(
                conversation: peer,
                content: .message(RichMessage(text: text, attachments: own, expiresAfter: expiresAfter))
            ).serialized
        )
    }

    /// What goes to whom: `forPeer` to each of the peer's devices, and `forOwn` (when there is
    /// one) to each of this account's other devices, as fetched for sending (or fetched afresh
    /// with `refreshingOwn`, after the relay said the devices changed).
    func recipientGroups(
        peer: UUID, peerKeys: [PublicIdentity], forPeer: Data, forOwn: Data?, refreshingOwn: Bool = false
    ) async throws -> [(payload: Data, recipients: [SessionCipher.Recipient])] {
        var groups = [(forPeer, peerKeys.map { SessionCipher.Recipient(user: peer, identity: $0) })]
        if let forOwn {
            let ownKeys = try await (refreshingOwn ? directory.refreshKeys(of: me) : directory.keysForSending(of: me))
                .filter { $0.deviceID != cipher.identity.deviceID }
            groups.append((forOwn, ownKeys.map { SessionCipher.Recipient(user: me, identity: $0) }))
        }
        return groups
    }

    /// Seals each payload for its devices in one store transaction (sessions stored before
    /// anything leaves, so a message key is never used twice). Devices without a session get a
    /// prekey bundle claimed first, outside the transaction (no I/O inside one), and the
    /// transaction starts again; with sessions for all, as for nearly every message, it is one
    /// transaction. It commits as the window's sealings do (`LocalStore.sealing`): without waiting
    /// for the disk unless it reserves message numbers (a session that begins, one past a chain's
    /// reservation; a chain a DH ratchet step started was born with its own, and the step is
    /// synced before anything sealed on it leaves). It used to be synced every time, which synced
    /// receipts whose numbers were reserved already too (a read receipt after a delivery receipt).
    func seal(
        _ groups: [(payload: Data, recipients: [SessionCipher.Recipient])], messageID: UUID, sentAt: Date
    ) async throws -> Components.Schemas.MessageBatch {
        let recipients = groups.flatMap(\.recipients)
        enum Outcome {
            case sealed([Data])
            case needing([SessionCipher.Recipient])
        }
        var bundles: [DeviceAddress: SessionCipher.Bundle] = [:]
        var envelopes: [Data] = []
        do {
            // A session can end between two rounds (a key change seen meanwhile): a third round
            // seals with what it has, and a device still without a bundle fails the attempt.
            rounds: for round in 0..<3 {
                let outcome = try store.transaction(store.sealing) { transaction -> Outcome in
                    let needing = try recipients.filter {
                        try bundles[$0.address] == nil && cipher.needsBundle($0, sessions: transaction)
                    }
                    guard needing.isEmpty || round == 2 else { return .needing(needing) }
                    return .sealed(
                        try sealedEnvelopes(
                            groups, messageID: messageID, sentAt: sentAt, bundles: bundles, in: transaction))
                }
                switch outcome {
                case .sealed(let sealed):
                    envelopes = sealed
                    break rounds
                case .needing(let needing):
                    for recipient in needing {
                        bundles[recipient.address] = try await claimBundle(of: recipient.address)
                    }
                }
            }
        } catch SessionCipher.SealError.untrustedBundle(let device, let reason) {
            let name =
                device.userID == me
                ? "your other device" : (try store.contact(id: device.userID)?.displayName ?? "the recipient")
            throw ConfidantKitError.untrustedPrekeys(name: name, reason: reason)
        }
        return Self.batch(messageID, recipients: recipients, envelopes: envelopes)
    }

    private func claimBundle(of device: DeviceAddress) async throws -> SessionCipher.Bundle {
        let bundles: [Components.Schemas.PrekeyBundle]
        switch try await relay.call({
            try await $0.claimPrekeyBundles(
                path: .init(userId: device.userID.canonicalString),
                query: .init(deviceId: device.deviceID.canonicalString))
        }) {
        case .ok(let ok): bundles = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        guard let wire = bundles.first(where: { UUID(uuidString: $0.deviceId) == device.deviceID }) else {
            return .noPrekeys
        }
        guard let bundle = PrekeyBundle(wire) else {
            throw ConfidantKitError.untrustedPrekeys(
                name: device.description, reason: "the bundle's key ids are out of range")
        }
        return .prekeys(bundle)
    }

    /// Over the live stream when connected, else one HTTP request; both answer with the relay's
    /// receipt or its refusal.
    func transmit(_ batch: Components.Schemas.MessageBatch) async throws {
        // What another process on the profile wrote of the sessions is on disk before envelopes
        // sealed with them leave (`LocalStore.syncBeforeSending`).
        try await store.syncBeforeSending()
        do {
            _ = try await stream.send(batch)
            transports.append(.stream)
            return
        } catch is StreamSender.Unavailable {
            // Not connected, or the connection dropped: HTTP, which is idempotent on the message id.
        }
        switch try await relay.call({ try await $0.sendMessage(body: .json(batch)) }) {
        case .ok: transports.append(.http)
        case .default(let status, let response): throw problem(status, response)
        }
    }

    private func finish(_ id: UUID, _ delivery: Delivery) throws -> Delivery {
        switch delivery {
        case .sent:
            try store.finish([id], failure: nil)
            events.emit(.delivery(id: id, status: .sent))
            through(id, .sent)
        case .failed(let reason):
            try store.finish([id], failure: reason)
            events.emit(.delivery(id: id, status: .failed(reason)))
            through(id, .failed(reason))
        case .waiting:
            break
        }
        return delivery
    }

    /// The message is sent or failed: its sender need not wait for the rest of the delivery.
    private func through(_ id: UUID, _ status: ChatMessage.Status) {
        if sendsWaiting.contains(id) { outcomes[id] = status }
        for waiter in messageWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
    }
}

/// Sizes of the media format (§6) an attachment is encrypted in, in both directions.
enum MediaStreamSize {
    static let segment = 65_536, overhead = 25, tag = 16

    static func encrypted(_ plaintext: Int) -> Int {
        overhead + plaintext + max(1, (plaintext + segment - 1) / segment) * tag
    }

    /// The largest plaintext that encrypts to at most `encrypted` bytes.
    static func plaintext(_ encrypted: Int) -> Int {
        let body = max(0, encrypted - overhead)
        let segments = max(1, (body + segment + tag - 1) / (segment + tag))
        return max(0, body - segments * tag)
    }
}
