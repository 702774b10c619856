import ConfidantCrypto

/// Rows a PostgreSQL write transaction stored, to hand to this instance's streams once it commits
/// (`MailboxHub.deliver(_:following:)`), instead of waking them to read the rows back: one query
/// less per stream and commit, and one round trip less between a message's commit and its
/// delivery.
///
/// Other instances write too, so a stream may take the rows only if it has sent (or holds) every
/// entry its device had before them: `following` gives, for each device, the greatest cursor its
/// mailbox held when the rows were inserted (0 for none). The transaction held the device's lock
/// (`MailboxPublisher.store`) from before its rows got their cursors until it committed, so every
/// entry with a smaller cursor had committed by then and is at most that cursor, or was deleted
/// (acknowledged, expired). A stream that is further behind is woken to read instead.
struct MailboxHandOver: Sendable {
    /// The stored rows, in cursor order.
    let entries: [AddressedEntry]
    /// For each device among the entries' recipients, the greatest cursor before them.
    let following: [DeviceAddress: Int64]
}
