import Foundation
import Synchronization

/// Something a screen may want to react to.
public enum MessengerEvent: Sendable {
    /// A message or notice was stored (received live, by sync, or sent from another device).
    case message(ChatMessage)
    /// An outgoing message changed state (sent, failed, queued).
    case delivery(id: UUID, status: ChatMessage.Status)
    /// Messages already stored changed: a receipt, an edit, a deletion, a timer, an expiry.
    case changed
    case connection(ConnectionState)
}

/// Hands events to every subscriber; each subscription is its own stream.
final class MessengerEvents: Sendable {
    private let subscribers = Mutex<[UUID: AsyncStream<MessengerEvent>.Continuation]>([:])
    /// Subscribers to the connection's state alone, so that a screen's banner on the main actor is
    /// not woken by every event to find these.
    private let connectionSubscribers = Mutex<[UUID: AsyncStream<ConnectionState>.Continuation]>([:])

    /// What happens from now on, until the stream is dropped.
    func subscribe() -> AsyncStream<MessengerEvent> {
        let (stream, continuation) = AsyncStream<MessengerEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.subscribers.withLock { $0[id] = nil } }
        return stream
    }

    /// The connection's state: `current` first, then each change, until the stream is dropped.
    /// Only the latest state waits for a slow reader. The caller reads `current` where changes are
    /// emitted from (the messenger's actor), so none comes between it and the subscription.
    func subscribeToConnection(current: ConnectionState) -> AsyncStream<ConnectionState> {
        let (stream, continuation) = AsyncStream<ConnectionState>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        continuation.yield(current)
        connectionSubscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.connectionSubscribers.withLock { $0[id] = nil } }
        return stream
    }

    func emit(_ event: MessengerEvent) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(event) }
        if case .connection(let state) = event {
            for continuation in connectionSubscribers.withLock({ Array($0.values) }) { continuation.yield(state) }
        }
    }

    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
        for continuation in connectionSubscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
