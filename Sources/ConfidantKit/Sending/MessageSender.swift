import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Sending: a message is stored and queued in the outbox first, then the outbox is delivered in
/// the order messages were written — each one sealed once per recipient device (and once per
/// own other device) in one store transaction, then sent over the live stream when connected,
/// over HTTP otherwise. The relay deduplicates on the message id, so a retry never stores twice.
actor MessageSender {
    /// How one delivery attempt ended.
    enum Delivery: Equatable {
        case sent
        /// Refused for good; the reason is stored with the message.
        case failed(String)
        /// Not now (server unreachable, busy, briefly unable to store): the message stays queued.
        case waiting(String)
    }

    private let relay: RelayClient
    private let store: LocalStore
    private let directory: KeyDirectory
    private let cipher: SessionCipher
    private let stream: StreamSender
    private let events: MessengerEvents
    private let retry: RetryPolicy
    private let now: @Sendable () -> Date
    private var draining = false
    private var drainAgain = false
    /// Why the last delivery attempt did not get through, for "queued" messages.
    private(set) var lastUnreachable: String?

    /// How a batch reached the relay.
    enum Transport: Equatable { case stream, http }
    /// How each message delivered by this instance went, for tests and diagnostics.
    private(set) var transports: [Transport] = []

    init(
        relay: RelayClient, store: LocalStore, directory: KeyDirectory, cipher: SessionCipher, stream: StreamSender,
        events: MessengerEvents, retry: RetryPolicy, now: @escaping @Sendable () -> Date
    ) {
        self.relay = relay
        self.store = store
        self.directory = directory
        self.cipher = cipher
        self.stream = stream
        self.events = events
        self.retry = retry
        self.now = now
    }

    private var me: UUID { cipher.userID }

    /// Stores the message, queues it, and delivers the outbox up to it. When the server cannot
    /// take it now the message stays `pending` and goes, in order, with the next delivery.
    func send(_ text: String, to contact: Contact, confirmKeyChange: Bool) async throws -> ChatMessage {
        let bytes = text.utf8.count
        guard bytes > 0 else { throw ConfidantKitError.emptyMessage }
        guard bytes <= ChatPayload.maximumTextBytes else {
            throw ConfidantKitError.messageTooLarge(bytes: bytes, limit: ChatPayload.maximumTextBytes)
        }
        try store.saveContact(contact)
        var peerKeys: [PublicIdentity]?
        do {
            peerKeys = try await directory.refreshKeys(of: contact.id)
            if try directory.keysChangedSinceVerification(contact.id), !confirmKeyChange {
                throw ConfidantKitError.keyChangedSinceVerification(name: contact.displayName)
            }
        } catch let error as ConfidantKitError where error.isTransient {
            // Queue it; the outbox delivers when the server is back.
        }
        let message = LocalStore.NewMessage(
            id: UUID(), peer: contact.id, direction: .outgoing, senderDevice: cipher.identity.deviceID,
            sentAt: now(), text: text, unreadableReason: nil, state: .pending)
        let stored = try store.queue(message, confirmed: confirmKeyChange, now: now())
        events.emit(.message(stored))
        try await deliverOutbox(fetched: peerKeys.map { [contact.id: $0] } ?? [:])
        return try store.message(id: stored.id, direction: .outgoing) ?? stored
    }

    /// Delivers everything waiting in the outbox, oldest first; returns how many went out. Stops
    /// at the first message the server cannot take now, so nothing overtakes it.
    /// A delivery asked for while another runs makes the running one look at the outbox again
    /// when it is through, so a message queued meanwhile is not left behind.
    @discardableResult
    func deliverOutbox(fetched: [UUID: [PublicIdentity]] = [:]) async throws -> Int {
        guard !draining else {
            drainAgain = true
            return 0
        }
        draining = true
        defer { draining = false }
        var sent = 0
        var fetched = fetched
        repeat {
            drainAgain = false
            for queued in try store.outbox() {
                switch try await deliver(queued, peerKeys: fetched.removeValue(forKey: queued.message.peer)) {
                case .sent: sent += 1
                case .failed: continue
                case .waiting: return sent
                }
            }
        } while drainAgain
        return sent
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

    // MARK: One message

    /// - Parameter peerKeys: the peer's devices as just fetched, if they were; fetched otherwise
    ///   (and again after a `device_mismatch`).
    private func deliver(_ queued: LocalStore.QueuedMessage, peerKeys fetched: [PublicIdentity]?) async throws
        -> Delivery
    {
        let message = queued.message
        guard let text = message.text else {
            return try finish(message.id, .failed("the message is missing from the local store"))
        }
        do {
            var fetched = fetched
            for attempt in 0..<2 {
                let peerKeys: [PublicIdentity]
                if let keys = fetched {
                    peerKeys = keys
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
                let ownKeys = try await directory.refreshKeys(of: me).filter { $0.deviceID != cipher.identity.deviceID }
                let recipients =
                    peerKeys.map { SessionCipher.Recipient(user: message.peer, identity: $0) }
                    + ownKeys.map { SessionCipher.Recipient(user: me, identity: $0) }
                let batch = try await seal(
                    ChatPayload(conversation: message.peer, text: text).serialized, message: message, for: recipients)
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
            return .waiting(error.description)
        } catch let error as ConfidantKitError {
            switch error {
            case .sessionExpired, .untrustedPrekeys, .storeDamaged: throw error
            default: return try finish(message.id, .failed(error.description))
            }
        }
    }

    /// Claims prekey bundles for the devices that need one, then seals for every device in one
    /// store transaction (sessions stored before anything leaves, so a message key is never
    /// used twice).
    private func seal(_ payload: Data, message: ChatMessage, for recipients: [SessionCipher.Recipient]) async throws
        -> Components.Schemas.MessageBatch
    {
        let needing = try store.transaction { transaction in
            try recipients.filter { try cipher.needsBundle($0, sessions: transaction) }
        }
        var bundles: [DeviceAddress: SessionCipher.Bundle] = [:]
        for recipient in needing { bundles[recipient.address] = try await claimBundle(of: recipient.address) }
        let envelopes: [Data]
        do {
            envelopes = try store.transaction { transaction in
                try cipher.seal(
                    payload, messageID: message.id, sentAt: message.sentAt, for: recipients, bundles: bundles,
                    sessions: transaction)
            }
        } catch SessionCipher.SealError.untrustedBundle(let device, let reason) {
            let name =
                device.userID == me
                ? "your other device" : (try store.contact(id: device.userID)?.displayName ?? "the recipient")
            throw ConfidantKitError.untrustedPrekeys(name: name, reason: reason)
        }
        return Components.Schemas.MessageBatch(
            messageId: message.id.canonicalString,
            envelopes: zip(recipients, envelopes).map {
                .init(
                    recipientUserId: $0.user.canonicalString, recipientDeviceId: $0.identity.deviceID.canonicalString,
                    envelope: .init($1))
            })
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
    private func transmit(_ batch: Components.Schemas.MessageBatch) async throws {
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
            try store.finish(id, failure: nil)
            events.emit(.delivery(id: id, status: .sent))
        case .failed(let reason):
            try store.finish(id, failure: reason)
            events.emit(.delivery(id: id, status: .failed(reason)))
        case .waiting:
            break
        }
        return delivery
    }
}
