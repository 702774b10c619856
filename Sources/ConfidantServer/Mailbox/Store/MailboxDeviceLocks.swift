import ConfidantCrypto
import Foundation
import SQLKit

/// PostgreSQL: the advisory locks a write transaction holds on the devices it stores entries for,
/// from before their cursors are drawn until it commits, so that each device's entries commit in
/// cursor order (`MailboxPublisher.store`); and the notice of those devices to the other
/// instances (`MailboxWakeNotice`), which PostgreSQL sends when (and only if) the transaction
/// commits. Both are subqueries, to ride in a statement the transaction runs anyway: a send group's
/// directory (`RecipientDirectory.load`), or one of their own.
struct MailboxDeviceLocks: Sendable {
    /// The devices, in the order every writer takes their locks, so that two writers never wait
    /// on each other crosswise.
    let devices: [DeviceAddress]
    private let payloads: [String]

    init(_ devices: some Sequence<DeviceAddress>, instance: UUID) {
        self.devices = Set(devices).sorted { $0.description < $1.description }
        payloads = MailboxWakeNotice.payloads(for: self.devices, from: instance)
    }

    /// The column that says how many locks the statement took.
    static let takenColumn = "locked"

    /// The two subqueries as columns of a `SELECT`: the locks taken (`takenColumn`), then the
    /// notice queued.
    var columns: [(value: any SQLExpression, name: String)] {
        [(taking, Self.takenColumn), (notifying, "notified")]
    }

    /// Whether `row`, of a statement with `columns`, says that it took every lock; nil for a row
    /// without them.
    func tookAll(in row: any SQLRow) -> Bool? {
        guard let taken = try? row.decode(column: Self.takenColumn, as: Int?.self) else { return nil }
        return taken == devices.count
    }

    /// Takes the locks, in order; its value is how many it took.
    private var taking: any SQLExpression {
        SQLQueryString(
            """
            (SELECT count(pg_advisory_xact_lock(hashtextextended(address, 0))) \
            FROM unnest(\(bind: devices.map(\.description))::text[]) AS address)
            """)
    }

    /// Queues the notice for the commit; its value is how many payloads it queued.
    private var notifying: any SQLExpression {
        SQLQueryString(
            """
            (SELECT count(pg_notify(\(bind: PostgresMailboxListener.channel), payload)) \
            FROM unnest(\(bind: payloads)::text[]) AS payload)
            """)
    }

    /// Whether every entry's device is among the locked ones.
    func cover(_ entries: [NewMailboxEntry]) -> Bool {
        let locked = Set(devices)
        return entries.allSatisfy { locked.contains($0.recipient) }
    }
}
