import ConfidantAPI
import Synchronization

/// Frames received and not yet handled, taken all at once.
final class FrameInbox: Sendable {
    enum Event: Sendable {
        case frame(Components.Schemas.StreamFrame)
        /// A binary receipt frame's receipts (§7.4).
        case receipts([Components.Schemas.MessageReceipt])
        /// Time to acknowledge what is held (`HeldAcknowledgements`).
        case acknowledge
        case closed
    }

    /// Yields when there is something to take; coalesces.
    let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    private let events = Mutex<[Event]>([])

    init() {
        (signals, signal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    func put(_ event: Event) {
        events.withLock { $0.append(event) }
        signal.yield()
        if case .closed = event { signal.finish() }
    }

    func takeAll() -> [Event] {
        events.withLock { events in
            defer { events = [] }
            return events
        }
    }
}
