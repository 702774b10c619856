import ConfidantAPI
import ConfidantCrypto
import Crypto
import Foundation

/// Receiving: mailbox entries (fetched by `sync`, or pushed by the live stream) are opened and
/// stored, and the mailbox cursor moved, in one store transaction — a session key is never used
/// up without its message stored. What opening needs from the network (a sender's keys this
/// profile has not seen) is fetched before the transaction, so no I/O happens inside it.
actor MessageReceiver {
    private let relay: RelayClient
    private let store: LocalStore
    private let directory: KeyDirectory
    private let cipher: SessionCipher
    private let prekeys: PrekeyMaintenance
    private let events: MessengerEvents

    init(
        relay: RelayClient, store: LocalStore, directory: KeyDirectory, cipher: SessionCipher,
        prekeys: PrekeyMaintenance,
        events: MessengerEvents
    ) {
        self.relay = relay
        self.store = store
        self.directory = directory
        self.cipher = cipher
        self.prekeys = prekeys
        self.events = events
    }

    private var me: UUID { cipher.userID }

    /// Fetches everything waiting on the server, a page at a time, stores it and acknowledges it.
    func fetchAll() async throws -> [ChatMessage] {
        var received: [ChatMessage] = []
        while true {
            let page: Components.Schemas.MailboxPage
            let query = Operations.FetchMailbox.Input.Query(after: try store.cursor(), limit: 200)
            switch try await relay.call({ try await $0.fetchMailbox(query: query) }) {
            case .ok(let ok): page = try ok.body.json
            case .default(let status, let response): throw problem(status, response)
            }
            let (stored, cursors) = try await receive(page.entries)
            received += stored
            if !cursors.isEmpty {
                let acknowledgement = Components.Schemas.StreamAcknowledgement(cursors: cursors)
                switch try await relay.call({ try await $0.acknowledge(body: .json(acknowledgement)) }) {
                case .ok: break
                case .default(let status, let response): throw problem(status, response)
                }
            }
            if !page.hasMore || page.entries.isEmpty { break }
        }
        return received
    }

    /// Opens and stores entries; returns what was newly stored and the cursors to acknowledge.
    func receive(_ entries: [Components.Schemas.MailboxEntry]) async throws -> (stored: [ChatMessage], cursors: [Int64])
    {
        guard !entries.isEmpty else { return ([], []) }
        try await learnKeys(for: entries)
        var replenish = false
        let stored = try store.transaction { transaction in
            var messages: [LocalStore.NewMessage] = []
            for entry in entries {
                switch entry.kind {
                case .envelope:
                    if let message = try open(entry, in: transaction) { messages.append(message) }
                case .prekeysLow:
                    replenish = true
                case .keyChange:
                    break  // the keys were fetched before the transaction
                }
            }
            let stored = try store.insert(messages, transaction.db)
            if let cursor = entries.map(\.cursor).max() { try LocalStore.setCursor(cursor, transaction.db) }
            return stored
        }
        for message in stored { events.emit(.message(message)) }
        if replenish {
            // Best effort: if this fails, the next instance's `maintain` sees the low count.
            try? await prekeys.replenish()
        }
        return (stored, entries.map(\.cursor))
    }

    /// Fetches the keys of users whose keys changed, of senders this profile does not know, and
    /// of sending devices it has no key for. Best effort for senders: an envelope from a device
    /// whose key stays unknown becomes an unreadable placeholder.
    private func learnKeys(for entries: [Components.Schemas.MailboxEntry]) async throws {
        var refreshed = Set<UUID>()
        for entry in entries where entry.kind == .keyChange {
            // The account's own devices too: a device signing in to it is shown as a notice.
            guard let change = entry.keyChange, let user = UUID(uuidString: change.userId), !refreshed.contains(user)
            else { continue }
            try await directory.refreshKeys(of: user)
            refreshed.insert(user)
        }
        for entry in entries where entry.kind == .envelope {
            guard let sender = UUID(uuidString: entry.senderUserId), !refreshed.contains(sender) else { continue }
            let device = entry.senderDeviceId.flatMap(UUID.init(uuidString:))
            let knownContact = try sender == me || store.contact(id: sender) != nil
            let knownDevice =
                try device.map { device in
                    try store.keys(of: sender, includingRetired: true).contains { $0.deviceID == device }
                } ?? true
            guard !knownContact || !knownDevice else { continue }
            refreshed.insert(sender)
            _ = try? await directory.refreshKeys(of: sender)
        }
    }

    /// The message an envelope entry carries, or a placeholder saying why it cannot be read;
    /// nil for an entry that names no valid sender (nothing to file it under).
    private func open(_ entry: Components.Schemas.MailboxEntry, in transaction: StoreTransaction) throws -> LocalStore
        .NewMessage?
    {
        guard let sender = UUID(uuidString: entry.senderUserId) else { return nil }
        let direction: ChatMessage.Direction = sender == me ? .outgoing : .incoming
        let state: MessageState = sender == me ? .sent : .received
        let messageID =
            entry.messageId.flatMap(UUID.init(uuidString:)) ?? Self.placeholderID(sender: sender, cursor: entry.cursor)
        func unreadable(_ reason: String, sentAt: Date = entry.receivedAt) -> LocalStore.NewMessage {
            LocalStore.NewMessage(
                id: messageID, peer: sender, direction: direction,
                senderDevice: entry.senderDeviceId.flatMap(UUID.init(uuidString:)),
                sentAt: sentAt, text: nil, unreadableReason: reason, state: state)
        }
        guard entry.messageId.flatMap(UUID.init(uuidString:)) != nil else {
            return unreadable("the server sent an envelope without a message id")
        }
        guard let data = entry.envelope?.data else { return unreadable("the server sent an empty envelope") }
        let wire: WireEnvelope
        do {
            wire = try WireEnvelope(serialized: Data(data))
        } catch {
            return unreadable("the envelope is malformed (\(error))")
        }
        switch try cipher.open(
            wire, from: sender, storedAt: entry.receivedAt, identities: transaction, sessions: transaction,
            prekeys: transaction)
        {
        case .failure(let failure):
            return unreadable(failure.reason, sentAt: wire.timestamp)
        case .success(let plaintext):
            do {
                let payload: ChatPayload
                if case .sealed(let envelope) = wire, envelope.header.suite == .seedLegacy,
                    (try? ChatPayload(serialized: plaintext)) == nil
                {
                    // Seed compatibility is on (the cipher opened it): a seed app sends bare text.
                    guard let text = String(validating: plaintext, as: UTF8.self) else {
                        return unreadable("the seed-legacy message is not UTF-8 text", sentAt: wire.timestamp)
                    }
                    payload = ChatPayload(conversation: me, text: text)
                } else {
                    payload = try ChatPayload(serialized: plaintext)
                }
                return LocalStore.NewMessage(
                    id: wire.messageID, peer: sender == me ? payload.conversation : sender, direction: direction,
                    senderDevice: wire.sender.deviceID, sentAt: wire.timestamp, text: payload.text,
                    unreadableReason: nil, state: state, envelopeVersion: Int(wire.version))
            } catch {
                return unreadable("\(error)", sentAt: wire.timestamp)
            }
        }
    }

    /// A stable id for a placeholder of an entry that came without one, so it is stored once.
    private static func placeholderID(sender: UUID, cursor: Int64) -> UUID {
        let digest = Array(SHA256.hash(data: Data("entry|\(sender.canonicalString)|\(cursor)".utf8)))
        return UUID(
            uuid: (
                digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6] & 0x0F | 0x50, digest[7],
                digest[8] & 0x3F | 0x80, digest[9], digest[10], digest[11], digest[12], digest[13], digest[14],
                digest[15]
            ))
    }
}
