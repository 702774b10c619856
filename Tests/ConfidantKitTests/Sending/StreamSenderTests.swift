import ConfidantAPI
import Foundation
import NIOEmbedded
import Synchronization
import Testing
import WebSocketKit

@testable import ConfidantKit

/// The stream's sender waits for a send's answer, or for a nudge that more is to be sent: a window
/// of sends fills its free places without waiting for its oldest answer (`MessageSender`).
@Suite("The stream's sends: answers and nudges")
struct StreamSenderTests {
    /// `body` with a sender attached to a socket on a channel of the test's own (nothing reads
    /// what it writes), closed after.
    private static func withAttached(_ body: (StreamSender) async throws -> Void) async throws {
        let channel = NIOAsyncTestingChannel()
        let socket = Mutex<WebSocket?>(nil)
        // A WebSocket is made on its channel's event loop.
        let made = channel.testingEventLoop.submit {
            WebSocket.client(on: channel) { webSocket in socket.withLock { $0 = webSocket } }
        }
        await channel.testingEventLoop.run()
        let upgraded = try await made.get()
        await channel.testingEventLoop.run()
        try await upgraded.get()
        let sender = StreamSender()
        await sender.attach(try #require(socket.withLock { $0 }), binarySendVersions: [])
        do {
            try await body(sender)
        } catch {
            _ = try? await channel.finish()
            throw error
        }
        _ = try? await channel.finish()
    }

    private static func batch() -> (Components.Schemas.MessageBatch, Components.Schemas.MessageReceipt) {
        let id = UUID()
        return (
            Components.Schemas.MessageBatch(messageId: id.uuidString, envelopes: []),
            Components.Schemas.MessageReceipt(messageId: id.uuidString, stored: 1, duplicate: false, receivedAt: Date())
        )
    }

    /// Waits until `sender` has someone waiting in `answerOrNudge`.
    private static func untilWaiting(_ sender: StreamSender) async throws {
        try await waitUntil { await sender.awaitsNudge }
    }

    @Test("a nudge wakes the wait without the answer, and the answer is still there to ask for")
    func nudgeThenAnswer() async throws {
        try await Self.withAttached { sender in
            let (batch, receipt) = Self.batch()
            let key = try await sender.start(batch, after: nil)
            let waiting = Task { try await sender.answerOrNudge(key) }
            try await Self.untilWaiting(sender)
            await sender.nudge()
            try await waitUntil { await !sender.awaitsNudge }
            // Had the nudge done nothing, this would end the wait, with the answer.
            await sender.resolve(receipt)
            #expect(try await waiting.value == nil)
            #expect(try await sender.answer(key).stored == 1)
        }
    }

    @Test("the answer ends the wait; a nudge with nobody waiting is not kept for later")
    func answerWithoutNudge() async throws {
        try await Self.withAttached { sender in
            let (batch, receipt) = Self.batch()
            let key = try await sender.start(batch, after: nil)
            await sender.nudge()
            let waiting = Task { try await sender.answerOrNudge(key) }
            try await Self.untilWaiting(sender)
            await sender.resolve(receipt)
            #expect(try await waiting.value?.stored == 1)
            #expect(await !sender.awaitsNudge)
            // Answered before anyone asked: at once.
            let (next, nextReceipt) = Self.batch()
            let nextKey = try await sender.start(next, after: nil)
            await sender.resolve(nextReceipt)
            #expect(try await sender.answerOrNudge(nextKey)?.stored == 1)
        }
    }

    @Test("a connection that drops ends the wait as unavailable")
    func detachEndsTheWait() async throws {
        try await Self.withAttached { sender in
            let key = try await sender.start(Self.batch().0, after: nil)
            let waiting = Task { try await sender.answerOrNudge(key) }
            try await Self.untilWaiting(sender)
            await sender.detach()
            await #expect(throws: StreamSender.Unavailable.self) { try await waiting.value }
            await sender.nudge()  // nobody waits any more
            #expect(await !sender.awaitsNudge)
        }
    }
}
