import Synchronization

/// What the outbox and the store did, for whoever passes one in (`Messenger`'s and `LocalStore`'s
/// initializers; the tests, a diagnostics screen): how each message reached the relay, how the
/// window of sends went, which commits waited for the disk.
/// Nothing in the library reads it, so a messenger without one records nothing.
final class DeliveryDiagnostics: Sendable {
    /// How a batch reached the relay.
    enum Transport: Equatable, Sendable { case stream, http }

    struct Record: Sendable {
        /// How each message this messenger delivered went, in order.
        var transports: [Transport] = []
        /// How many of them went in a window of ordered sends (`StreamWindow`).
        var sentInWindows = 0
        /// How many new messages a window queued for their senders (`OutboxDrain.queueHandedOver`).
        var queuedByWindows = 0
        /// New messages handed to the running window and not yet queued.
        var handedOver = 0
        /// Whether a window of sends runs now.
        var windowRunning = false
        /// Sealing transactions that reserved message numbers, and so were synced as they
        /// committed (`LocalStore.countedTransaction`).
        var reservingCommits = 0
    }

    private let state = Mutex(Record())

    init() {}

    var record: Record { state.withLock { $0 } }

    func update(_ change: (inout Record) -> Void) {
        state.withLock { change(&$0) }
    }
}
