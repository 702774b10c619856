import ConfidantCrypto
import ConfidantVault
import Foundation

extension Messenger {
    // MARK: Edit, delete, disappear

    /// Replaces the text of a message you wrote, here and — by a sealed control message — on
    /// the peer's devices (in a group, every member's, with the group's sender key) and your
    /// others, which keep an "edited" mark. Only its author can.
    /// - Throws: `ConfidantKitError.notYourMessage` for a message someone else wrote,
    ///   `.messageNotFound`, `.messageTooLarge`, `.emptyMessage`.
    public func edit(_ messageID: UUID, text: String) async throws {
        guard !text.isEmpty else { throw ConfidantKitError.emptyMessage }
        guard text.utf8.count <= ChatPayload.maximumTextBytes else {
            throw ConfidantKitError.messageTooLarge(bytes: text.utf8.count, limit: ChatPayload.maximumTextBytes)
        }
        let message = try ownMessage(messageID)
        let inGroup = try store.holdsGroup(message.peer)
        let now = now()
        try store.write { db in
            guard
                try store.applyEdit(
                    messageID, text: text, author: me, me: me, conversation: message.peer, inGroup: inGroup, at: now,
                    db)
            else { throw ConfidantKitError.messageNotFound(messageID) }
            try store.queueControl(
                ChatPayload(conversation: message.peer, content: .edit(messageID: messageID, text: text)),
                to: message.peer, now: now, db)
        }
        eventHub.emit(.changed)
        try await sender.deliverOutbox()
    }

    /// Deletes a message you wrote for everyone: its text and files go here and on every device
    /// of the peer (or of the group's members) and your own; a "This message was deleted" line
    /// stays.
    public func deleteForEveryone(_ messageID: UUID) async throws {
        let message = try ownMessage(messageID)
        let inGroup = try store.holdsGroup(message.peer)
        let now = now()
        let files = try store.write { db -> [AttachmentFile] in
            guard
                let files = try store.applyDeletion(
                    messageID, author: me, me: me, conversation: message.peer, inGroup: inGroup, at: now, db)
            else { throw ConfidantKitError.messageNotFound(messageID) }
            try store.queueControl(
                ChatPayload(conversation: message.peer, content: .deletion(messageID: messageID)), to: message.peer,
                now: now, db)
            return files
        }
        store.removeAttachmentFiles(files)
        eventHub.emit(.changed)
        try await sender.deliverOutbox()
    }

    /// Deletes a message from this device only, whoever wrote it: its row (overwritten on disk)
    /// and its files go; the peer and your other devices keep theirs. One waiting in the outbox is
    /// not sent (one already on its way may still arrive). A copy the server hands over again
    /// does not bring it back.
    /// - Throws: `ConfidantKitError.messageNotFound` when the conversation has no such message.
    public func deleteForMe(_ messageID: UUID, with peer: UUID) throws {
        guard let files = try store.deleteLocally(messageID, peer: peer, me: me, now: now()) else {
            throw ConfidantKitError.messageNotFound(messageID)
        }
        store.removeAttachmentFiles(files)
        eventHub.emit(.changed)
    }

    private func ownMessage(_ id: UUID) throws -> ChatMessage {
        if let message = try store.message(id: id, direction: .outgoing) { return message }
        if try store.message(id: id, direction: .incoming) != nil { throw ConfidantKitError.notYourMessage(id) }
        throw ConfidantKitError.messageNotFound(id)
    }

    /// Sets the conversation's disappearing-message timer (nil turns it off) for both sides:
    /// messages sent from now on carry it, and every device deletes them that long after it
    /// got them. Both sides see a notice.
    public func setDisappearingTimer(_ seconds: Int?, with contact: Contact) async throws {
        if let seconds, !DisappearingTimer.accepts(seconds) { throw ConfidantKitError.invalidTimer(seconds) }
        try store.saveContact(contact)
        let now = now()
        let notice = try store.write { db -> [ChatMessage] in
            try store.setTimer(seconds, for: contact.id, at: now, db)
            let id = UUID()
            try store.queueControl(
                ChatPayload(conversation: contact.id, content: .timer(expiresAfter: seconds ?? 0)), to: contact.id,
                now: now, db)
            return try store.insert(
                [
                    LocalStore.NewMessage(
                        id: id, peer: contact.id, direction: .notice, senderDevice: identity.deviceID, sentAt: now,
                        text: seconds.map { "You set disappearing messages to \(DisappearingTimer.describe($0))" }
                            ?? "You turned disappearing messages off", unreadableReason: nil, state: .received,
                        noticeKind: .timer)
                ], db)
        }
        for message in notice { eventHub.emit(.message(message)) }
        try await sender.deliverOutbox()
    }

    /// The conversation's disappearing-message timer in seconds; nil when messages stay.
    public func disappearingTimer(with peer: UUID) throws -> Int? { try store.timer(for: peer) }

    /// The conversation's disappearing-message timer, now and after every change to it (only
    /// commits that write conversation settings read it again, not every message).
    public nonisolated func disappearingTimerUpdates(with peer: UUID) -> AsyncThrowingStream<Int?, any Error> {
        let store = store
        return store.observe { db in try store.timer(for: peer, db) }
    }

    /// Deletes the messages whose time is up (overwritten on disk); returns how many went. The
    /// live connection does this as they expire; call it after opening a profile to catch up.
    @discardableResult
    public func removeExpiredMessages() throws -> Int {
        let removed = try store.deleteExpired(now: now(), me: me)
        if removed > 0 { eventHub.emit(.changed) }
        return removed
    }

    // MARK: Attachments

    /// Decrypts an attachment into `directory` (fetching it first when this device does not
    /// have it): the file appears only once it is whole and authentic — a tampered or truncated
    /// attachment is reported and nothing is written.
    /// - Parameters:
    ///   - messageID: the message that carries the attachment.
    ///   - index: its position in the message (0-based).
    ///   - peer: the conversation the message is in; without it, a message id that several
    ///     conversations have is refused (``ConfidantKitError/messageInSeveralConversations(_:)``).
    ///   - directory: where the decrypted file goes (created when missing).
    ///   - progress: called as the ciphertext is fetched and decrypted.
    /// - Returns: the file written (its name the sender's, made safe; `-1`, `-2`… if taken).
    public func saveAttachment(
        of messageID: UUID, index: Int, with peer: UUID? = nil, to directory: URL,
        progress: @escaping @Sendable (AttachmentProgress) -> Void = { _ in }
    ) async throws -> URL {
        guard let (pointer, file) = try store.attachment(ofMessage: messageID, index: index, with: peer) else {
            throw ConfidantKitError.messageNotFound(messageID)
        }
        try await attachments.fetch(pointer, as: file, progress: progress)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let destination = Self.freeName(pointer.safeFileName, in: directory)
        try attachments.decrypt(pointer, as: file, to: destination, progress: progress)
        return destination
    }

    /// An attachment for showing or playing: what it is, and a reader that decrypts any byte
    /// range (fetched first when this device does not have it). `peer`: the conversation the
    /// message is in, as for ``saveAttachment(of:index:with:to:progress:)``.
    public func attachmentReader(of messageID: UUID, index: Int, with peer: UUID? = nil) async throws -> (
        ChatAttachment, MediaReader
    ) {
        guard let (pointer, file) = try store.attachment(ofMessage: messageID, index: index, with: peer) else {
            throw ConfidantKitError.messageNotFound(messageID)
        }
        try await attachments.fetch(pointer, as: file) { _ in }
        return (store.chatAttachment(pointer, index: index, as: file), try attachments.reader(pointer, as: file))
    }

    private static func freeName(_ name: String, in directory: URL) -> URL {
        var candidate = directory.appendingPathComponent(name)
        let base = (name as NSString).deletingPathExtension
        let suffix = (name as NSString).pathExtension
        var number = 1
        while FileManager.default.fileExists(atPath: candidate.path) {
            candidate = directory.appendingPathComponent(
                suffix.isEmpty ? "\(base)-\(number)" : "\(base)-\(number).\(suffix)")
            number += 1
        }
        return candidate
    }
}
