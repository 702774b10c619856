import ConfidantAPI
import ConfidantCrypto
import Crypto
import Foundation
import GRDB

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
    private let openChats: OpenChats
    private let now: @Sendable () -> Date

    init(
        relay: RelayClient, store: LocalStore, directory: KeyDirectory, cipher: SessionCipher,
        prekeys: PrekeyMaintenance,
        events: MessengerEvents, openChats: OpenChats, now: @escaping @Sendable () -> Date
    ) {
        self.openChats = openChats
        self.relay = relay
        self.store = store
        self.directory = directory
        self.cipher = cipher
        self.prekeys = prekeys
        self.events = events
        self.now = now
    }

    private var me: UUID { cipher.userID }

    /// Fetches everything waiting on the server, a page at a time, stores it and acknowledges it.
    func fetchAll() async throws -> [ChatMessage] {
        var received: [ChatMessage] = []
        while true {
            let page = try await mailbox(after: try store.cursor(), limit: 200)
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

    /// A page of the device's relay mailbox: the entries after `cursor`, oldest first.
    private func mailbox(after cursor: Int64, limit: Int) async throws -> Components.Schemas.MailboxPage {
        let query = Operations.FetchMailbox.Input.Query(after: cursor, limit: limit)
        switch try await relay.call({ try await $0.fetchMailbox(query: query) }) {
        case .ok(let ok): return try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// Opens and stores entries, synced to disk; returns what was newly stored and the cursors
    /// to acknowledge. Control messages are applied in the same transaction (receipts move sent
    /// messages on, authors' edits and deletions change their messages, timers change
    /// conversations), and a delivery receipt for the new messages is queued for each sender.
    func receive(_ entries: [Components.Schemas.MailboxEntry]) async throws -> (stored: [ChatMessage], cursors: [Int64])
    {
        let received = try await receiveUnsynced(entries)
        try store.sync(through: received.commit)
        return (received.stored, received.cursors)
    }

    /// ``receive(_:)`` without the sync: the caller syncs through `commit`
    /// (`LocalStore.sync(through:)`) before it acknowledges the cursors, so that one sync can
    /// cover several batches (the live stream's acknowledgements, `MailboxStreamClient`).
    func receiveUnsynced(_ entries: [Components.Schemas.MailboxEntry]) async throws -> (
        stored: [ChatMessage], cursors: [Int64], commit: UInt64
    ) {
        guard !entries.isEmpty else { return ([], [], 0) }
        try await learnKeys(for: entries)
        var replenish = false
        let now = now()
        // Committed without waiting for the disk, so that a chat on screen shows the messages
        // one sync sooner; synced before they are acknowledged to the relay. A crash or power
        // cut before that loses the whole transaction (messages, session steps, cursor) and the
        // relay, never told, delivers the entries again.
        let ((stored, removedFiles, changed), commit) = try store.countedTransaction(.deferred) { transaction in
            var messages: [LocalStore.NewMessage] = []
            var removedFiles: [UUID] = []
            var changed = false
            for entry in entries {
                switch entry.kind {
                case .envelope:
                    switch try open(entry, in: transaction, now: now) {
                    case .message(let message): messages.append(message)
                    case .control(let control):
                        let effect = try apply(control, now: now, transaction.db)
                        removedFiles += effect.removedFiles
                        messages += effect.notices
                        changed = changed || effect.changed
                    case .nothing: break
                    }
                case .prekeysLow:
                    replenish = true
                case .keyChange:
                    break  // the keys were fetched before the transaction
                }
            }
            // What arrives in a chat on screen is read now, and its sender learns that instead
            // of only that it was delivered (OpenChats).
            let reading = openChats.now
            for index in messages.indices
            where messages[index].direction == .incoming && reading.peers.contains(messages[index].peer) {
                messages[index].startsUnread = false
            }
            let stored = try store.insert(messages, transaction.db)
            let delivered = Dictionary(
                grouping: stored.filter { $0.direction == .incoming && !$0.isUnreadable }, by: \.peer)
            for (peer, messages) in delivered {
                let kind: Receipt.Kind = reading.sendsReadReceipts && reading.peers.contains(peer) ? .read : .delivered
                try store.queueControl(
                    ChatPayload(conversation: peer, content: .receipt(Receipt(kind, messageIDs: messages.map(\.id)))),
                    to: peer, toOwnDevices: false, now: now, transaction.db)
            }
            if let cursor = entries.map(\.cursor).max() { try LocalStore.setCursor(cursor, transaction.db) }
            return (stored, removedFiles, changed || !delivered.isEmpty)
        }
        store.removeAttachmentFiles(removedFiles)
        for message in stored { events.emit(.message(message)) }
        if changed { events.emit(.changed) }
        if replenish {
            // Best effort: if this fails, the next instance's `maintain` sees the low count.
            try? await prekeys.replenish()
        }
        return (stored, entries.map(\.cursor), commit)
    }

    /// Entries this device stored (at or below its stored cursor) that the relay still holds,
    /// synced to disk first: their acknowledgement was lost with a process that held it
    /// (`HeldAcknowledgements`). The stream does not deliver them again (it resumes after the
    /// stored cursor), so nothing else would take them off the relay before its retention ends.
    /// The oldest page: they come before anything not yet received.
    func unacknowledged() async throws -> [Int64] {
        let page = try await mailbox(after: 0, limit: 100)
        let stored = try store.cursor()
        let cursors = page.entries.map(\.cursor).filter { $0 <= stored }
        if !cursors.isEmpty { try store.syncAll() }
        return cursors
    }

    /// A control message from `sender`, opened.
    struct Control {
        let payload: ChatPayload
        let sender: UUID
        let senderDevice: UUID?
        let messageID: UUID
        let sentAt: Date
    }

    /// What an entry turned out to be.
    enum Opened {
        case message(LocalStore.NewMessage)
        case control(Control)
        case nothing
    }

    /// What applying a control message did.
    struct Effect {
        var changed = false
        var removedFiles: [UUID] = []
        var notices: [LocalStore.NewMessage] = []
    }

    /// Applies a receipt (from the peer only), an edit or deletion (to its author's own messages
    /// only — one that names someone else's message finds nothing), or a timer.
    private func apply(_ control: Control, now: Date, _ db: GRDB.Database) throws -> Effect {
        let sender = control.sender
        let conversation = sender == me ? control.payload.conversation : sender
        var effect = Effect()
        switch control.payload.content {
        case .receipt(let receipt):
            guard sender != me else { break }
            effect.changed = try store.applyReceipt(receipt, from: sender, db) > 0
        case .edit(let target, let text):
            guard text.utf8.count <= ChatPayload.maximumTextBytes else { break }
            effect.changed = try store.applyEdit(
                target, text: text, author: sender, me: me, conversation: conversation, at: control.sentAt, db)
        case .deletion(let target):
            if let files = try store.applyDeletion(
                target, author: sender, me: me, conversation: conversation, at: control.sentAt, db)
            {
                effect.changed = true
                effect.removedFiles = files
            }
        case .timer(let seconds):
            try store.setTimer(seconds == 0 ? nil : seconds, for: conversation, db)
            let who = sender == me ? "You" : (try store.contacts([sender], db)[sender]?.displayName ?? "They")
            let text =
                seconds == 0
                ? "\(who) turned disappearing messages off"
                : "\(who) set disappearing messages to \(DisappearingTimer.describe(seconds))"
            effect.notices.append(
                LocalStore.NewMessage(
                    id: control.messageID, peer: conversation, direction: .notice, senderDevice: control.senderDevice,
                    sentAt: control.sentAt, text: text, unreadableReason: nil, state: .received))
            effect.changed = true
        case .text, .message:
            break
        }
        return effect
    }

    /// Fetches the keys of users whose keys changed, of senders this profile does not know, and
    /// of sending devices it has no key for. Best effort for senders: an envelope from a device
    /// whose key stays unknown becomes an unreadable placeholder.
    private func learnKeys(for entries: [Components.Schemas.MailboxEntry]) async throws {
        var refreshed = Set<UUID>()
        for entry in entries where entry.kind == .keyChange {
            // The account's own devices too: a device signing in to it is shown as a notice.
            guard let change = entry.keyChange, let user = UUID(hyphenatedHex: change.userId), !refreshed.contains(user)
            else { continue }
            try await directory.refreshKeys(of: user)
            refreshed.insert(user)
        }
        let knownSenders = store.knownSenders
        let senders = Set(
            entries.compactMap { entry -> KnownSenders.Sender? in
                guard entry.kind == .envelope, let sender = UUID(hyphenatedHex: entry.senderUserId),
                    !refreshed.contains(sender)
                else { return nil }
                return KnownSenders.Sender(
                    user: sender, device: entry.senderDeviceId.flatMap(UUID.init(hyphenatedHex:)))
            }
        ).filter { !knownSenders.contains($0) }
        guard !senders.isEmpty else { return }
        let me = me
        // One read for the batch: two per envelope were a tenth of a client's CPU.
        let (known, unknown) = try store.read { db in
            func isKnown(_ sender: KnownSenders.Sender) throws -> Bool {
                guard try sender.user == me || LocalStore.knowsContact(sender.user, db) else { return false }
                guard let device = sender.device else { return true }
                return try LocalStore.hasKey(of: sender.user, device: device, db)
            }
            var known: [KnownSenders.Sender] = []
            var unknown: [UUID] = []
            for sender in senders {
                if try isKnown(sender) { known.append(sender) } else { unknown.append(sender.user) }
            }
            return (known, unknown)
        }
        knownSenders.insert(known)
        for sender in unknown where !refreshed.contains(sender) {
            refreshed.insert(sender)
            _ = try? await directory.refreshKeys(of: sender)
        }
    }

    /// The message an envelope entry carries, a control message, or a placeholder saying why it
    /// cannot be read; nothing for an entry that names no valid sender (nothing to file it under).
    private func open(_ entry: Components.Schemas.MailboxEntry, in transaction: StoreTransaction, now: Date) throws
        -> Opened
    {
        guard let sender = UUID(hyphenatedHex: entry.senderUserId) else { return .nothing }
        let direction: ChatMessage.Direction = sender == me ? .outgoing : .incoming
        let state: MessageState = sender == me ? .sent : .received
        let sentID = entry.messageId.flatMap(UUID.init(hyphenatedHex:))
        let messageID = sentID ?? Self.placeholderID(sender: sender, cursor: entry.cursor)
        func unreadable(_ reason: String, sentAt: Date = entry.receivedAt) -> Opened {
            .message(
                LocalStore.NewMessage(
                    id: messageID, peer: sender, direction: direction,
                    senderDevice: entry.senderDeviceId.flatMap(UUID.init(hyphenatedHex:)),
                    sentAt: sentAt, text: nil, unreadableReason: reason, state: state))
        }
        guard sentID != nil else {
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
            let payload: ChatPayload
            do {
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
            } catch {
                return unreadable("\(error)", sentAt: wire.timestamp)
            }
            var message = LocalStore.NewMessage(
                id: wire.messageID, peer: sender == me ? payload.conversation : sender, direction: direction,
                senderDevice: wire.sender.deviceID, sentAt: wire.timestamp, text: payload.text,
                unreadableReason: nil, state: state, envelopeVersion: Int(wire.version))
            switch payload.content {
            case .text:
                return .message(message)
            case .message(let rich):
                message.attachments = rich.attachments
                // The timer runs from when this device got the message.
                message.expiresAt = rich.expiresAfter.map { now.addingTimeInterval(TimeInterval($0)) }
                return .message(message)
            case .receipt, .edit, .deletion, .timer:
                return .control(
                    Control(
                        payload: payload, sender: sender, senderDevice: wire.sender.deviceID, messageID: wire.messageID,
                        sentAt: wire.timestamp))
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
