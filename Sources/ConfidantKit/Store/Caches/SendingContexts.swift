import Foundation
import GRDB
import Synchronization

/// What sending to a peer needs from the store: the contact as stored, what the user verified
/// of its keys (`KeyDirectory.keysChanged`), and the conversation's disappearing timer.
struct SendingContext: Sendable, Equatable {
    var contact: Contact?
    var verifiedDigest: Data?
    var timer: Int?
    /// Where the store stood when it was read, for ``SendingContexts/check(_:_:)``.
    let stamp: SendingContexts.Stamp
}

/// Each peer's ``SendingContext`` as last read, so that a send does not read it again (a read
/// transaction and two queries per message).
///
/// A context may go stale: this connection changes a contact or a timer (the `TEMP` triggers of
/// ``install(on:)`` say so at once, and everything kept is forgotten), or another process on the
/// profile does (`PRAGMA data_version` moves). So the transaction that queues the message checks
/// the context's ``Stamp`` (``check(_:_:)``) and refuses it with ``Stale`` when either moved since;
/// the sender then reads the context afresh and starts again. Nothing is sent on a stale context:
/// a timer set meanwhile in another process applies to the message as it would have before.
final class SendingContexts: Sendable {
    /// This connection's count of changes to contacts and timers, and the profile's data version.
    struct Stamp: Sendable, Equatable {
        let generation: UInt64
        let dataVersion: Int64
    }

    /// The context the message was built on changed before the message was queued.
    struct Stale: Error {}

    /// Contexts kept at most; past it the map starts again empty.
    static let maximumCount = 1_024

    private struct State {
        var generation: UInt64 = 0
        var contexts: [UUID: SendingContext] = [:]
    }

    private let state = Mutex(State())

    /// The context last read for `peer`, if nothing this connection wrote has changed since.
    func cached(_ peer: UUID) -> SendingContext? {
        state.withLock { $0.contexts[peer] }
    }

    /// Keeps a context just read, unless this connection changed contacts or timers after it
    /// was read.
    func remember(_ context: SendingContext, for peer: UUID) {
        state.withLock { state in
            guard context.stamp.generation == state.generation else { return }
            if state.contexts.count >= Self.maximumCount, state.contexts[peer] == nil {
                state.contexts.removeAll(keepingCapacity: true)
            }
            state.contexts[peer] = context
        }
    }

    /// Where the store stands now, inside a transaction on `db`.
    func stamp(_ db: Database) throws -> Stamp {
        Stamp(generation: state.withLock { $0.generation }, dataVersion: try db.dataVersion())
    }

    /// Throws ``Stale`` (and forgets every context) unless `stamp` is where the store stands now,
    /// inside the write transaction that queues a message built on it.
    func check(_ stamp: Stamp, _ db: Database) throws {
        let current = try self.stamp(db)
        guard current != stamp else { return }
        changed()
        throw Stale()
    }

    /// A contact or a timer changed: every context kept may be stale. A change that rolls back
    /// forgets them too; they are read again.
    func changed() {
        state.withLock { state in
            state.generation &+= 1
            state.contexts.removeAll(keepingCapacity: true)
        }
    }

    /// Has this connection's changes to contacts and timers call ``changed()`` as they are made:
    /// `TEMP` triggers (this connection's alone; another process's changes show in the data
    /// version) on the tables a context is read from. Run once the schema is in place.
    func install(on db: Database) throws {
        db.add(
            function: DatabaseFunction("confidant_sending_context_changed", argumentCount: 0, pure: false) { _ in
                self.changed()
                return nil
            })
        for table in ["contact", "conversation_setting"] {
            for event in ["INSERT", "UPDATE", "DELETE"] {
                try db.execute(
                    sql: """
                        CREATE TEMP TRIGGER IF NOT EXISTS sending_context_\(table)_\(event.lowercased())
                        AFTER \(event) ON main.\(table)
                        BEGIN SELECT confidant_sending_context_changed(); END
                        """)
            }
        }
    }
}
