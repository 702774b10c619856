import NIOCore

/// Turns the flushes of one event-loop turn into one. WebSocketKit flushes every frame it sends,
/// so a stream that hands a reader 50 entries, or a sender 50 receipts, made 50 `writev` system
/// calls; flushing and socket writes were a fifth of the relay's time under load
/// (docs/BENCHMARKS.md). Here the first flush is put off to a task queued behind what the event
/// loop already has to run — the other frames of the burst — and later flushes before it ran are
/// dropped; nothing waits for a timer. A close first flushes what is pending, so no frame
/// written before it is lost.
final class FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny

    private var flushPending = false

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
