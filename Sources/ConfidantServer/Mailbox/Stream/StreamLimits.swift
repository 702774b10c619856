import Foundation
import NIOCore
import NIOHTTP1
import NIOWebSocket
import Synchronization
import Vapor

/// The upgrade to `/v1/stream` with every message bounded: NIO's upgrader bounds one frame, and a
/// message larger than `maximumMessageBytes` in all its fragments closes the connection with 1009
/// (message too big) as soon as they pass the limit, before it is buffered. Frames are unmasked
/// once, as they arrive (`ClientFrameUnmasker`), and handed to a `StreamSocket`, which pings the
/// connection so that a peer that stopped answering is closed after `pingInterval`.
struct BoundedWebSocketUpgrader: Upgrader {
    let maximumMessageBytes: Int
    let pingInterval: TimeAmount
    let onUpgrade: @Sendable (StreamSocket) -> Void

    func applyUpgrade(req: Request, res: Response) -> any HTTPServerProtocolUpgrader {
        let maximumMessageBytes = maximumMessageBytes
        let pingInterval = pingInterval
        let onUpgrade = onUpgrade
        return NIOWebSocketServerUpgrader(
            maxFrameSize: maximumMessageBytes, automaticErrorHandling: false,
            shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture([:]) },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ClientFrameUnmasker())
                    try channel.pipeline.syncOperations.addHandler(
                        MessageSizeLimiter(maximumMessageBytes: maximumMessageBytes))
                    let socket = try StreamSocketHandler.install(on: channel)
                    socket.startPinging(every: pingInterval)
                    onUpgrade(socket)
                }
            })
    }
}

/// Counts the bytes of the message being received, across its fragments, and closes the
/// connection with 1009 once they pass the limit — before anything is buffered past it.
final class MessageSizeLimiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let maximumMessageBytes: Int
    private var received = 0
    private var closing = false

    init(maximumMessageBytes: Int) {
        self.maximumMessageBytes = maximumMessageBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary, .continuation:
            received = (frame.opcode == .continuation ? received : 0) + frame.length
            if received > maximumMessageBytes {
                closing = true
                var reason = context.channel.allocator.buffer(capacity: 2)
                reason.write(webSocketErrorCode: .messageTooLarge)
                let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)
                // Close once the close frame is out (the promise runs on this event loop).
                let closed = context.eventLoop.makePromise(of: Void.self)
                context.writeAndFlush(wrapOutboundOut(close), promise: closed)
                let channel = context.channel
                closed.futureResult.whenComplete { _ in channel.close(promise: nil) }
                return
            }
            if frame.fin { received = 0 }
        default:
            break
        }
        context.fireChannelRead(data)
    }
}

/// Bytes one connection may have queued in one direction; past the budget the connection is
/// closed (1008) rather than let the server buffer for a client that does not keep up.
final class ByteBudget: Sendable {
    let limit: Int
    private let used = Mutex(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` from the budget; false (and nothing taken) when they do not fit.
    func take(_ bytes: Int) -> Bool {
        used.withLock { used in
            guard used + bytes <= limit else { return false }
            used += bytes
            return true
        }
    }

    func give(_ bytes: Int) {
        used.withLock { $0 -= bytes }
    }
}
