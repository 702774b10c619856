import NIOCore
import NIOWebSocket

/// The stream connection's outbound handler just before NIO's frame encoder (and after TLS, when
/// the relay serves it). It writes `StreamSocket`'s frames as bytes — header and payload in one
/// buffer — and turns the flushes of one event-loop turn into one.
///
/// Why frames are written here and not through NIO's frame encoder: it wrote each header as a
/// buffer of its own (and Vapor's idle timer, now taken off the connection, allocated a promise
/// per write), and a stream writes a receipt per message sent and entries per message received.
/// Why flushes are coalesced: a stream that hands a reader 50 entries, or a sender 50 receipts,
/// would make 50 `writev` system calls. The first flush is put off to a task queued behind
/// what the event loop already has to run — the other frames of the burst — and later flushes
/// before it ran are dropped; nothing waits for a timer. A close first flushes what is pending,
/// so no frame written before it is lost. Frames other handlers write (a close with 1002 or 1009)
/// pass through the encoder and then here.
final class StreamFrameWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The longest header of a frame the server sends (unmasked, a 64-bit length).
    static let maximumHeaderBytes = 10

    private var context: ChannelHandlerContext?
    private var flushPending = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Writes one frame with `payload`, flushed within this event-loop turn. On the event loop.
    func write(_ opcode: WebSocketOpcode, _ payload: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(
            wrapOutboundOut(Self.frame(opcode, payload, allocator: context.channel.allocator)), promise: promise)
        flush(context: context)
    }

    /// A whole server frame: header and payload in one buffer.
    static func frame(_ opcode: WebSocketOpcode, _ payload: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        let length = payload.readableBytes
        var frame = allocator.buffer(capacity: maximumHeaderBytes + length)
        frame.writeWebSocketFrameHeader(opcode, length: length, masked: false)
        var payload = payload
        frame.writeBuffer(&payload)
        return frame
    }

    func flush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.assumeIsolated().execute {
            guard self.flushPending else { return }
            self.flushPending = false
            context.flush()
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if flushPending {
            flushPending = false
            context.flush()
        }
        context.close(mode: mode, promise: promise)
    }
}
