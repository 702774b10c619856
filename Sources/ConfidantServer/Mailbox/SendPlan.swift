import ConfidantCrypto
import Foundation

/// What a group of sends stores, decided from the recipients' directory alone (no I/O): a retried
/// message is answered from its earlier receipt before its devices are checked; each other
/// message must name exactly the current devices and find room in every recipient's mailbox,
/// counting what the group adds. One refused message does not affect the others, except a message
/// that must follow it (`after`): that one is stored only if the message it follows was, now or
/// before, so it never overtakes a refused one.
struct SendPlan {
    /// One per submission, in order.
    private(set) var results: [Result<MailboxReceipt, any Error>] = []
    /// The accepted messages' envelopes, one entry per recipient device, in submission order.
    private(set) var entries: [NewMailboxEntry] = []
    /// The accepted shared messages' envelopes, each stored once (`SharedBodyTable`).
    private(set) var bodies: [SharedBodyTable.Body] = []
    /// The receipts to record for the accepted messages.
    private(set) var accepted: [(key: PostedMessageTable.Key, row: PostedMessageTable.Row)] = []
    /// For each sender, the users the accepted messages went to.
    private(set) var conversations: [UUID: Set<UUID>] = [:]

    init(_ submissions: [MailboxSubmission], directory: RecipientDirectory, at now: Date, mailboxLimit: Int) {
        var posted = directory.posted
        // How full each recipient's mailbox is, counting what this group adds.
        var pending = directory.pending
        for submission in submissions {
            let key = PostedMessageTable.Key(sender: submission.sender.userID, message: submission.messageID)
            if let earlier = posted[key] {
                results.append(
                    .success(MailboxReceipt(stored: earlier.stored, duplicate: true, receivedAt: earlier.receivedAt)))
                continue
            }
            let recipients = submission.envelopes.map(\.recipient)
            do {
                if let after = submission.after,
                    posted[PostedMessageTable.Key(sender: submission.sender.userID, message: after)] == nil
                {
                    throw APIFailure(
                        .predecessorMissing,
                        """
                        Message \(submission.messageID.canonicalString) follows message \(after.canonicalString), \
                        which this server does not hold from you: send that one first.
                        """)
                }
                try directory.check(recipients, sender: submission.sender)
                if let full = recipients.first(where: { pending[$0, default: 0] >= mailboxLimit }) {
                    throw APIFailure(
                        .quotaExceeded,
                        """
                        The mailbox of device \(full) is full (\(mailboxLimit) messages wait unread); \
                        try again once it has read some.
                        """, retryAfter: 60)
                }
            } catch {
                results.append(.failure(error))
                continue
            }
            for recipient in recipients { pending[recipient, default: 0] += 1 }
            if submission.isShared, let first = submission.envelopes.first {
                bodies.append(
                    .init(sender: submission.sender.userID, messageID: submission.messageID, payload: first.bytes))
            }
            let kind: MailboxRecord.Kind = submission.isShared ? .sharedEnvelope : .envelope
            entries += submission.envelopes.map {
                NewMailboxEntry(
                    recipient: $0.recipient, kind: kind, sender: submission.sender,
                    messageID: submission.messageID,
                    payload: $0.bytes, receivedAt: now)
            }
            let row = PostedMessageTable.Row(stored: recipients.count, receivedAt: now)
            accepted.append((key, row))
            posted[key] = row
            for recipient in recipients where recipient.userID != submission.sender.userID {
                conversations[submission.sender.userID, default: []].insert(recipient.userID)
            }
            results.append(.success(MailboxReceipt(stored: recipients.count, duplicate: false, receivedAt: now)))
        }
    }
}
