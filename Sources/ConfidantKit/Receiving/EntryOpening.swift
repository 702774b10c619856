import ConfidantAPI
import ConfidantCrypto
import Crypto
import Foundation
import GRDB

/// A mailbox entry opened: the message it carries, a control message, or a placeholder saying
/// why it cannot be read.
struct EntryOpening {
    let cipher: SessionCipher
    let store: LocalStore

    var me: UUID { cipher.userID }

    /// What an entry turned out to be.
    enum Opened {
        case message(LocalStore.NewMessage)
        case control(ControlApplication.Control)
        case nothing
    }

    /// The message an envelope entry carries, a control message, or a placeholder saying why it
    /// cannot be read; nothing for an entry that names no valid sender (nothing to file it under).
    func open(_ entry: Components.Schemas.MailboxEntry, in transaction: StoreTransaction, now: Date) throws
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
        if data.first == GroupEnvelope.version {
            return try openGroupEnvelope(
                Data(data), from: sender, receivedAt: entry.receivedAt, unreadable: unreadable, transaction.db)
        }
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
                message.reply = rich.replyTo
                return .message(message)
            case .receipt, .edit, .deletion, .timer, .groupChanges, .groupMessage, .senderKey, .reaction:
                return .control(
                    ControlApplication.Control(
                        payload: payload, sender: sender, senderDevice: wire.sender.deviceID, messageID: wire.messageID,
                        sentAt: wire.timestamp))
            }
        }
    }

    /// A group message (envelope v3): opened with the chain its sender device gave this one,
    /// which is stored stepped in the same transaction. One received before (its key used) is
    /// nothing: it was stored when it first came.
    private func openGroupEnvelope(
        _ data: Data, from sender: UUID, receivedAt: Date, unreadable: (String, Date) -> Opened,
        _ db: GRDB.Database
    ) throws -> Opened {
        let envelope: GroupEnvelope
        do {
            envelope = try GroupEnvelope(serialized: data)
        } catch {
            return unreadable("the group envelope is malformed (\(error))", receivedAt)
        }
        let sentAt = envelope.timestamp
        guard envelope.sender.userID == sender else {
            return unreadable("the group envelope names another sender than the server does", sentAt)
        }
        guard let held = try store.receivingChain(envelope.message.chainID, db) else {
            return unreadable("its sender's group key has not reached this device", sentAt)
        }
        var chain = held.chain
        let owner = held.owner
        guard owner == envelope.sender else {
            return unreadable("it is sealed with another device's group key than its sender's", sentAt)
        }
        let plaintext: Data
        do {
            plaintext = try envelope.open(with: &chain)
        } catch .duplicate {
            return .nothing
        } catch {
            return unreadable("\(error)", sentAt)
        }
        let payload: ChatPayload
        do {
            payload = try ChatPayload(serialized: plaintext)
        } catch {
            return unreadable("\(error)", sentAt)
        }
        let fitsEnvelope =
            switch payload.content {
            case .groupMessage(let id, _, _): id == envelope.messageID
            case .edit, .deletion, .reaction: true
            default: false
            }
        guard fitsEnvelope, payload.conversation == chain.groupID else {
            return unreadable(
                "the group envelope carries something other than a message, edit, deletion or reaction for its group",
                sentAt)
        }
        try store.saveReceivingChain(chain, owner: owner, db)
        return .control(
            ControlApplication.Control(
                payload: payload, sender: sender, senderDevice: envelope.sender.deviceID,
                messageID: envelope.messageID, sentAt: sentAt))
    }

    /// A stable id for a placeholder of an entry that came without one, so it is stored once.
    static func placeholderID(sender: UUID, cursor: Int64) -> UUID {
        let digest = Array(SHA256.hash(data: Data("entry|\(sender.canonicalString)|\(cursor)".utf8)))
        return UUID(
            uuid: (
                digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6] & 0x0F | 0x50, digest[7],
                digest[8] & 0x3F | 0x80, digest[9], digest[10], digest[11], digest[12], digest[13], digest[14],
                digest[15]
            ))
    }
}
