import Foundation
import Testing

@testable import ConfidantKit

@Suite("Messenger events")
struct MessengerEventsTests {
    @Test(
        "the connection's stream hears only the connection's changes, the latest for a reader behind; the others hear everything"
    )
    func connectionUpdatesOnly() async throws {
        let hub = MessengerEvents()
        let everything = hub.subscribe()
        let connection = hub.subscribeToConnection(current: .connecting)
        let message = ChatMessage(
            id: UUID(), sequence: 1, peer: UUID(), direction: .incoming, sentAt: Date(),
            text: "hello", unreadableReason: nil, status: .received, isRead: false)
        hub.emit(.message(message))
        hub.emit(.changed)
        hub.emit(.delivery(id: message.id, status: .sent))
        hub.emit(.connection(.live))
        hub.emit(.changed)
        hub.emit(.connection(.stopped))
        hub.finish()

        var states: [ConnectionState] = []
        for await state in connection { states.append(state) }
        // The reader fell behind: it gets the latest state only.
        #expect(states == [.stopped])

        var kinds: [String] = []
        for await event in everything {
            switch event {
            case .message: kinds.append("message")
            case .changed: kinds.append("changed")
            case .delivery: kinds.append("delivery")
            case .connection(let state): kinds.append("connection \(state)")
            }
        }
        #expect(kinds == ["message", "changed", "delivery", "connection live", "changed", "connection stopped"])
    }

    @Test("a reader that keeps up gets every change of the connection, in order, and nothing else")
    func connectionChangesInOrder() async throws {
        let hub = MessengerEvents()
        var states = hub.subscribeToConnection(current: .stopped).makeAsyncIterator()
        #expect(await states.next() == .stopped)
        for state in [ConnectionState.connecting, .live, .waiting(retryIn: .seconds(2), reason: "gone"), .signedOut] {
            hub.emit(.changed)
            hub.emit(.connection(state))
            #expect(await states.next() == state)
        }
        hub.finish()
        #expect(await states.next() == nil)
    }
}
