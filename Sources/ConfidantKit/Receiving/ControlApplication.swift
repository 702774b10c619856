import ConfidantAPI
import ConfidantCrypto
import Foundation
import GRDB

/// What a received control message changes here: a receipt moves sent messages on (from the
/// peer only), an edit or deletion changes its author's own message (one that names someone
/// else's message finds nothing), a reaction sets its sender's on a message of the conversation, a timer sets the conversation's and leaves a notice, a group
/// change is kept once its author's signature checks.
struct ControlApplication {
    let store: LocalStore
    let me: UUID
    /// This device, whose key checks the group changes it made itself.
    let ownDevice: SessionCipher.Recipient

    /// A control message from `sender`, opened.
    struct Control {
        let payload: ChatPayload
        let sender: UUID
        let senderDevice: UUID?
        let messageID: UUID
        let sentAt: Date
    }

    /// What applying a control message did.
    struct Effect {
        var changed = false
        var removedFiles: [AttachmentFile] = []
        var notices: [LocalStore.NewMessage] = []
        /// Users whose keys group changes wait for.
        var groupAuthorsWanted: Set<UUID> = []
    }

    /// Applies a receipt (from the peer only), an edit or deletion (to its author's own messages
    /// only — one that names someone else's message finds nothing), or a timer. An edit,
    /// deletion or timer applies once: one seen before (a relay handing a one-shot envelope over
    /// again) or sent longer ago than `LocalStore.replayWindow` changes nothing. Receipts need no
    /// such record: they only ever move a message on.
    func apply(_ control: Control, now: Date, _ db: GRDB.Database) throws -> Effect {
        let sender = control.sender
        let conversation = sender == me ? control.payload.conversation : sender
        var effect = Effect()
        if case .receipt = control.payload.content {
        } else {
            guard !LocalStore.isTooOld(control.sentAt, now: now),
                try store.firstSight(of: control.messageID, from: sender, at: now, db)
            else { return effect }
        }
        switch control.payload.content {
        case .receipt(let receipt):
            guard sender != me else { break }
            let group = control.payload.conversation
            if let ledger = try store.groupLedger(group, db) {
                // A member's receipt for this account's messages in the group.
                guard ledger.state?.members.contains(sender) == true else { break }
                effect.changed = try store.applyGroupReceipt(receipt, from: sender, group: group, db) > 0
            } else {
                effect.changed = try store.applyReceipt(receipt, from: sender, db) > 0
            }
        case .edit(let target, let text):
            guard text.utf8.count <= ChatPayload.maximumTextBytes else { break }
            let scope = try changeScope(of: control, conversation: conversation, db)
            effect.changed = try store.applyEdit(
                target, text: text, author: sender, me: me, conversation: scope.conversation, inGroup: scope.inGroup,
                at: control.sentAt, db)
        case .deletion(let target):
            let scope = try changeScope(of: control, conversation: conversation, db)
            if let files = try store.applyDeletion(
                target, author: sender, me: me, conversation: scope.conversation, inGroup: scope.inGroup,
                at: control.sentAt, db)
            {
                effect.changed = true
                effect.removedFiles = files
            }
        case .reaction(let target, let emoji):
            let scope = try changeScope(of: control, conversation: conversation, db)
            if scope.inGroup {
                // In a group, only its members react (as this device holds the group).
                guard try store.groupLedger(scope.conversation, db)?.state?.members.contains(sender) == true else {
                    break
                }
            }
            effect.changed = try store.applyReaction(
                target, emoji: emoji, by: sender, conversation: scope.conversation, at: control.sentAt, db)
        case .timer(let seconds):
            // A timer set later on either side stays: every device keeps the latest setting.
            guard try store.applyTimer(seconds == 0 ? nil : seconds, for: conversation, at: control.sentAt, db)
            else { break }
            let who = sender == me ? "You" : (try store.contacts([sender], db)[sender]?.displayName ?? "They")
            let text =
                seconds == 0
                ? "\(who) turned disappearing messages off"
                : "\(who) set disappearing messages to \(DisappearingTimer.describe(seconds))"
            effect.notices.append(
                LocalStore.NewMessage(
                    id: control.messageID, peer: conversation, direction: .notice, senderDevice: control.senderDevice,
                    sentAt: control.sentAt, text: text, unreadableReason: nil, state: .received, noticeKind: .timer))
            effect.changed = true
        case .groupChanges(let changes):
            for bytes in changes {
                switch try store.receiveGroupChange(
                    bytes, group: control.payload.conversation, own: ownDevice, now: now, db)
                {
                case .stored: effect.changed = true
                case .awaitingKey(let author): effect.groupAuthorsWanted.insert(author)
                case .duplicate, .dropped: break
                }
            }
        case .groupMessage(let id, let text, let reply):
            effect.notices += try groupMessage(id, text: text, replyTo: reply, of: control, now: now, db)
        case .senderKey(let distribution):
            guard let device = control.senderDevice else { break }
            try store.receiveSenderKey(
                distribution, from: DeviceAddress(userID: sender, deviceID: device), now: now, db)
        case .text, .message:
            break
        }
        return effect
    }

    /// Where an edit or deletion applies: in the group its payload names when this device holds
    /// that group (to the sender's own messages there), else in the one-to-one conversation.
    private func changeScope(of control: Control, conversation: UUID, _ db: GRDB.Database) throws -> (
        conversation: UUID, inGroup: Bool
    ) {
        let group = control.payload.conversation
        return try store.holdsGroup(group, db) ? (group, true) : (conversation, false)
    }

    /// A message to a group: stored in the group's conversation when its sender is a member as
    /// this device holds the group, as a placeholder saying why when not.
    private func groupMessage(
        _ id: UUID, text: String, replyTo reply: ReplyQuote?, of control: Control, now: Date, _ db: GRDB.Database
    ) throws -> [LocalStore.NewMessage] {
        let group = control.payload.conversation
        let fromMe = control.sender == me
        var message = LocalStore.NewMessage(
            id: id, peer: group, direction: fromMe ? .outgoing : .incoming, senderDevice: control.senderDevice,
            sentAt: control.sentAt, text: text, unreadableReason: nil, state: fromMe ? .sent : .received,
            author: fromMe ? nil : control.sender, reply: reply)
        guard let state = try store.groupLedger(group, db)?.state else {
            // A group this device holds no changes of: nothing to file it under.
            return []
        }
        if !state.members.contains(control.sender) {
            message.text = nil
            message.reply = nil
            message.unreadableReason = "its sender is not a member of \(state.name)"
        }
        message.expiresAt = state.expiry(from: now)
        return [message]
    }
}
