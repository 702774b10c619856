import Foundation
import Synchronization

/// Senders this store knows — the contact, and the sending device's key — remembered once seen.
/// Receiving asks about the senders of every batch before opening it (a read transaction each
/// time, on the store's one connection, ahead of the transaction that stores the batch). A store
/// never deletes contacts or device keys (a retired key stays, to tell old envelopes from
/// forgeries), so a sender once known stays known and only known ones are kept here.
final class KnownSenders: Sendable {
    /// Senders kept at most; past it the set starts again empty.
    static let maximumSenders = 4_096

    struct Sender: Hashable, Sendable {
        let user: UUID
        /// Nil for an envelope that names no device (the user alone is then known).
        let device: UUID?
    }

    private let known = Mutex<Set<Sender>>([])

    func contains(_ sender: Sender) -> Bool { known.withLock { $0.contains(sender) } }

    func insert(_ senders: some Sequence<Sender>) {
        known.withLock { known in
            if known.count >= Self.maximumSenders { known.removeAll(keepingCapacity: true) }
            known.formUnion(senders)
        }
    }
}
