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
    /// This device, whose key checks the group changes it made itself: made once, not per
    /// control message (its fingerprint is a SHA-256 of the whole key).
    private let ownDevice: SessionCipher.Recipient

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
        ownDevice = SessionCipher.Recipient(user: cipher.userID, identity: cipher.identity.publicIdentity)
        self.prekeys = prekeys
        self.events = events
        self.now = now
    }

    private var me: UUID { cipher.userID }
    private var opening: EntryOpening { EntryOpening(cipher: cipher, store: store) }
    private var controls: ControlApplication {
        ControlApplication(store: store, me: me, ownDevice: ownDevice)
    }

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
        let ((stored, removedFiles, changed, authorsWanted), commit) = try store.countedTransaction(.deferred) {
            transaction in
            var messages: [LocalStore.NewMessage] = []
            var removedFiles: [AttachmentFile] = []
            var changed = false
            var authorsWanted: Set<UUID> = []
            for entry in entries {
                switch entry.kind {
                case .envelope:
                    switch try opening.open(entry, in: transaction, now: now) {
                    case .message(let message):
                        // A one-shot envelope opens as often as it comes: one too old, or whose
                        // message was here and is gone (it expired), is not stored again.
                        if message.envelopeVersion == 1 {
                            let sender = message.direction == .incoming ? message.peer : me
                            if LocalStore.isTooOld(message.sentAt, now: now) { continue }
                            if try store.wasSeen(message.id, from: sender, transaction.db) { continue }
                        }
                        messages.append(message)
                    case .control(let control):
                        let effect = try controls.apply(control, now: now, transaction.db)
                        removedFiles += effect.removedFiles
                        messages += effect.notices
                        changed = changed || effect.changed
                        authorsWanted.formUnion(effect.groupAuthorsWanted)
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
            // A receipt goes to the peer, or in a group to the message's author, naming the conversation.
            let delivered = Dictionary(
                grouping: stored.filter { $0.direction == .incoming && !$0.isUnreadable },
                by: { ReceiptTarget(conversation: $0.peer, recipient: $0.author ?? $0.peer) })
            for (target, messages) in delivered {
                let kind: Receipt.Kind =
                    reading.sendsReadReceipts && reading.peers.contains(target.conversation) ? .read : .delivered
                try store.queueControl(
                    ChatPayload(
                        conversation: target.conversation,
                        content: .receipt(Receipt(kind, messageIDs: messages.map(\.id)))),
                    to: target.recipient, now: now, transaction.db)
            }
            if let cursor = entries.map(\.cursor).max() { try LocalStore.setCursor(cursor, transaction.db) }
            return (stored, removedFiles, changed || !delivered.isEmpty, authorsWanted)
        }
        store.removeAttachmentFiles(removedFiles)
        for message in stored { events.emit(.message(message)) }
        let groupsGained = await verifyGroupChanges(by: authorsWanted)
        if changed || groupsGained { events.emit(.changed) }
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

    /// Fetches the key histories of group changes' authors whose keys this profile lacks and
    /// checks the changes that waited for them. Best effort: unfetched, they wait for the next.
    private func verifyGroupChanges(by authors: Set<UUID>) async -> Bool {
        guard !authors.isEmpty else { return false }
        var histories: [UUID: [PublicIdentity]] = [:]
        for author in authors {
            if let keys = try? await directory.keyHistory(of: author) { histories[author] = keys }
        }
        let gained = try? store.verifyWaitingGroupChanges(own: ownDevice, histories: histories)
        return !(gained ?? []).isEmpty
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
        // One read for the batch, not two per envelope.
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
}

/// Where a receipt goes: the conversation it names and the user whose devices get it (the peer,
/// or in a group the message's author).
private struct ReceiptTarget: Hashable {
    let conversation: UUID
    let recipient: UUID
}
