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

    /// What happens from now on, until the stream is dropped.
    func subscribe() -> AsyncStream<MessengerEvent> {
        let (stream, continuation) = AsyncStream<MessengerEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.subscribers.withLock { $0[id] = nil } }
        return stream
    }

    func emit(_ event: MessengerEvent) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(event) }
    }

    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
