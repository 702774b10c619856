import NIOCore
import NIOEmbedded
import Testing

@testable import ConfidantServer

/// The flushes of one event-loop turn become one, and nothing written is lost on close.
@Suite("Flush coalescing on streams")
struct FlushCoalescerTests {
    /// Counts the flushes that reach the socket.
    private final class FlushCounter: ChannelOutboundHandler {
        typealias OutboundIn = NIOAny
        var flushes = 0

        func flush(context: ChannelHandlerContext) {
            flushes += 1
            context.flush()
        }
    }

    private static func buffer(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    @Test("three frames written and flushed in one turn go out with one flush, in order")
    func coalesces() throws {
        let counter = FlushCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(FlushCoalescer(), position: .first)
        for text in ["a", "b", "c"] { channel.writeAndFlush(Self.buffer(text), promise: nil) }
        // Nothing is out before the queued flush runs.
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.run()
        #expect(counter.flushes == 3)  // the counter sits behind the coalescer, at the tail
        var out: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { out.append(String(buffer: buffer)) }
        #expect(out == ["a", "b", "c"])
        _ = try channel.finish()
    }

    @Test("flushes reaching the socket: one per turn, however many frames")
    func oneFlushPerTurn() throws {
        let atSocket = FlushCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FlushCoalescer())
        try channel.pipeline.syncOperations.addHandler(atSocket, position: .first)
        for text in ["a", "b", "c", "d"] { channel.writeAndFlush(Self.buffer(text), promise: nil) }
        channel.embeddedEventLoop.run()
        #expect(atSocket.flushes == 1)
        channel.writeAndFlush(Self.buffer("e"), promise: nil)
        channel.embeddedEventLoop.run()
        #expect(atSocket.flushes == 2)
        var count = 0
        while try channel.readOutbound(as: ByteBuffer.self) != nil { count += 1 }
        #expect(count == 5)
        _ = try channel.finish()
    }

    @Test("a close right after a write flushes it first")
    func closeFlushes() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FlushCoalescer())
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(Self.buffer("last words"), promise: written)
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
        #expect(throws: Never.self) { try written.futureResult.wait() }
        #expect(try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == "last words")
    }
}
