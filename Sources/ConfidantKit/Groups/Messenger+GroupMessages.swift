import ConfidantCrypto
import Foundation

/// Messages to a group: sealed once with this device's sender key and uploaded once for every
/// member device (docs/PROTOCOL.md §10.4, `GroupDelivery`).
extension Messenger {
    /// Sends `text` to every member of the group but this account (and to its other devices).
    /// The message is pending until the relay has it for every member device, then sent.
    /// - Throws: `ConfidantKitError.unknownGroup`, `.notGroupMember`, `.emptyMessage`, `.messageTooLarge`.
    @discardableResult
    public func sendToGroup(_ groupID: UUID, text: String) async throws -> ChatMessage {
        guard let text = try SendPreparation.checkedText(text, attachments: 0) else {
            throw ConfidantKitError.emptyMessage
        }
        guard let state = try store.groupLedger(groupID)?.state else { throw ConfidantKitError.unknownGroup(groupID) }
        guard state.members.contains(me) else { throw ConfidantKitError.notGroupMember(state.name) }
        let now = now()
        let id = UUID.timeOrdered(at: now)
        let payload = ChatPayload(conversation: groupID, content: .groupMessage(messageID: id, text: text))
        let stored = try store.write { db -> ChatMessage? in
            let line = try store.insert(
                [
                    LocalStore.NewMessage(
                        id: id, peer: groupID, direction: .outgoing, senderDevice: identity.deviceID, sentAt: now,
                        text: text, unreadableReason: nil, state: .pending)
                ], db
            ).first
            // One control under the group: sealed once with the sender key (`GroupDelivery`).
            try store.queueControl(payload, to: groupID, toOwnDevices: true, carrying: id, now: now, db)
            return line
        }
        guard let stored else { throw ConfidantKitError.storeDamaged("a new group message was not stored") }
        eventHub.emit(.changed)
        try await sender.deliverOutbox()
        return try store.message(id: id, direction: .outgoing) ?? stored
    }

    /// The group's conversation, oldest first: the last `limit` messages.
    public func groupHistory(_ groupID: UUID, limit: Int = 50) throws -> [ChatMessage] {
        try store.history(with: groupID, limit: limit)
    }
}
