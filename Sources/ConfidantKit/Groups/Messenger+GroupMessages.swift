import ConfidantCrypto
import Foundation

/// Messages to a group: sealed once with this device's sender key and uploaded once for every
/// member device (docs/PROTOCOL.md §10.4, `GroupDelivery`).
extension Messenger {
    /// Sends `text` to every member of the group but this account (and to its other devices),
    /// as a reply to the group's message `target` if given (its quote sealed inside, as one-to-one).
    /// The message is pending until the relay has it for every member device, then sent.
    /// - Throws: `ConfidantKitError.unknownGroup`, `.notGroupMember`, `.emptyMessage`, `.messageTooLarge`,
    ///   `.messageNotFound` for a `target` that is not a live message of the group.
    @discardableResult
    public func sendToGroup(_ groupID: UUID, text: String, replyingTo target: UUID? = nil) async throws -> ChatMessage {
        guard let text = try SendPreparation.checkedText(text, attachments: 0) else {
            throw ConfidantKitError.emptyMessage
        }
        guard let state = try store.groupLedger(groupID)?.state else { throw ConfidantKitError.unknownGroup(groupID) }
        guard state.members.contains(me) else { throw ConfidantKitError.notGroupMember(state.name) }
        var reply: ReplyQuote?
        if let target {
            guard let message = try message(target, with: groupID), message.direction != .notice, !message.isDeleted
            else { throw ConfidantKitError.messageNotFound(target) }
            reply = ReplyQuote(of: message)
        }
        let now = now()
        let id = UUID.timeOrdered(at: now)
        let payload = ChatPayload(
            conversation: groupID, content: .groupMessage(messageID: id, text: text, replyTo: reply))
        let stored = try store.write { db -> ChatMessage? in
            let line = try store.insert(
                [
                    LocalStore.NewMessage(
                        id: id, peer: groupID, direction: .outgoing, senderDevice: identity.deviceID, sentAt: now,
                        text: text, unreadableReason: nil, state: .pending, expiresAt: state.expiry(from: now),
                        reply: reply)
                ], db
            ).first
            // One control under the group: sealed once with the sender key (`GroupDelivery`).
            try store.queueControl(payload, to: groupID, carrying: id, now: now, db)
            return line
        }
        guard let stored else { throw ConfidantKitError.storeDamaged("a new group message was not stored") }
        eventHub.emit(.changed)
        try await sender.deliverOutbox()
        return try store.message(id: id, direction: .outgoing) ?? stored
    }

    /// The group's conversation, oldest first: the last `limit` messages, this account's own with
    /// how many members have them and have read them (``ChatMessage/groupReceipts``).
    public func groupHistory(_ groupID: UUID, limit: Int = 50) throws -> [ChatMessage] {
        var lines = try store.history(with: groupID, limit: limit)
        let others = Set(try store.groupLedger(groupID)?.state?.members ?? []).subtracting([me])
        let own = lines.filter { $0.direction == .outgoing }.map(\.id)
        let counts = try store.groupReceiptCounts(own, group: groupID, members: others)
        for index in lines.indices where lines[index].direction == .outgoing {
            let count = counts[lines[index].id]
            lines[index].groupReceipts = GroupReceipts(
                delivered: count?.delivered ?? 0, read: count?.read ?? 0, members: others.count)
        }
        return lines
    }
}

extension GroupState {
    /// When a group message that arrives at `date` disappears under the group's timer.
    func expiry(from date: Date) -> Date? {
        timerSeconds > 0 ? date.addingTimeInterval(TimeInterval(timerSeconds)) : nil
    }
}
