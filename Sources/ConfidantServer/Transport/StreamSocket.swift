import NIOCore
import NIOWebSocket

/// The server side of one `/v1/stream` WebSocket: text and binary messages in, frames out, pings,
/// and the closing handshake (RFC 6455). It replaces WebSocketKit's `WebSocket` on the relay's
/// busiest path: per message received WebSocketKit allocates a lock and a buffer, copies the
/// payload into it and takes locks around each frame; per frame sent it goes through the whole
/// pipeline and writes the header as a buffer of its own; and each connection holds a dozen
/// locked boxes for as long as it lives. Here a message that is one frame (every
/// message ConfidantKit sends) reaches its handler as the decoder cut it, and frames go out from
/// `StreamFrameWriter` next to the socket.
///
/// Handlers are set and called on the socket's event loop; `send` and `close` may be called from
/// anywhere. Messages larger than the connection's limit never get here (`MessageSizeLimiter`
/// closes first) and frames arrive unmasked (`ClientFrameUnmasker`).
final class StreamSocket: Sendable {
    typealias TextHandler = @Sendable (StreamSocket, String) -> Void
    typealias BinaryHandler = @Sendable (StreamSocket, ByteBuffer) -> Void

    let channel: any Channel
    private let state: NIOLoopBoundBox<State>

    /// The fragments a message may come in at most.
    static let maximumFragments = 4096
    /// How long the closing handshake may take before the connection is closed without it.
    static let closeTimeout = TimeAmount.seconds(5)

    private struct State {
        let writer: StreamFrameWriter
        var onText: TextHandler = { _, _ in }
        var onBinary: BinaryHandler = { _, _ in }
        /// A message whose first fragments arrived: its kind and bytes so far.
        var fragments: (opcode: WebSocketOpcode, count: Int, data: ByteBuffer)?
        /// A close frame was sent: the next frame that matters is the peer's close.
        var closing = false
        var awaitingPong = false
        var pings: RepeatedTask?
    }

    var eventLoop: any EventLoop { channel.eventLoop }
    /// Completes once the connection is closed.
    var onClose: EventLoopFuture<Void> { channel.closeFuture }
    var isClosed: Bool { !channel.isActive }

    /// Made by `StreamSocketHandler.install` on the channel's event loop.
    fileprivate init(channel: any Channel, writer: StreamFrameWriter) {
        self.channel = channel
        state = NIOLoopBoundBox(State(writer: writer), eventLoop: channel.eventLoop)
    }

    /// Sets the handler of text messages. On the event loop.
    func onText(_ handler: @escaping TextHandler) { state.value.onText = handler }
    /// Sets the handler of binary messages. On the event loop.
    func onBinary(_ handler: @escaping BinaryHandler) { state.value.onBinary = handler }

    /// Pings every `interval`; a peer that has not answered one ping by the next is disconnected.
    /// On the event loop.
    func startPinging(every interval: TimeAmount) {
        state.value.pings?.cancel()
        state.value.pings = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            guard !self.state.value.awaitingPong else {
                self.channel.close(promise: nil)
                return
            }
            self.state.value.awaitingPong = true
            self.write(.ping, self.channel.allocator.buffer(capacity: 0), promise: nil)
        }
    }

    /// Sends a text message; `promise` completes once it is written.
    func send(_ text: String, promise: EventLoopPromise<Void>? = nil) {
        send(.text, channel.allocator.buffer(string: text), promise: promise)
    }

    /// Sends a text message and waits until it is written.
    func send(_ text: String) async throws {
        let written = eventLoop.makePromise(of: Void.self)
        send(text, promise: written)
        try await written.futureResult.get()
    }

    /// Sends a binary message; `promise` completes once it is written.
    func send(binary payload: ByteBuffer, promise: EventLoopPromise<Void>? = nil) {
        send(.binary, payload, promise: promise)
    }

    private func send(_ opcode: WebSocketOpcode, _ payload: ByteBuffer, promise: EventLoopPromise<Void>?) {
        if eventLoop.inEventLoop {
            write(opcode, payload, promise: promise)
        } else {
            eventLoop.execute { self.write(opcode, payload, promise: promise) }
        }
    }

    /// On the event loop: nothing is sent after a close frame.
    private func write(_ opcode: WebSocketOpcode, _ payload: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard !state.value.closing else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        state.value.writer.write(opcode, payload, promise: promise)
    }

    /// Starts the closing handshake with `code`: sends a close frame, then closes the connection
    /// when the peer answers with its own, or after `closeTimeout`. The future completes once the
    /// close frame is written (at once if the connection is closed or closing already).
    @discardableResult
    func close(code: WebSocketErrorCode) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        if eventLoop.inEventLoop {
            startClosing(code, promise: promise)
        } else {
            eventLoop.execute { self.startClosing(code, promise: promise) }
        }
        return promise.futureResult
    }

    /// `close(code:)`, waiting for the close frame to be written.
    func close(code: WebSocketErrorCode) async throws {
        try await close(code: code).get()
    }

    private func startClosing(_ code: WebSocketErrorCode, promise: EventLoopPromise<Void>) {
        guard channel.isActive, !state.value.closing else { return promise.succeed() }
        var payload = channel.allocator.buffer(capacity: 2)
        // 1005 and 1006 report a missing code or a dropped connection; they never go on the wire.
        let wire = UInt16(webSocketErrorCode: code)
        payload.write(webSocketErrorCode: wire == 1005 || wire == 1006 ? .normalClosure : code)
        state.value.writer.write(.connectionClose, payload, promise: promise)
        state.value.closing = true
        let channel = channel
        let deadline = eventLoop.scheduleTask(in: Self.closeTimeout) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in deadline.cancel() }
    }

    /// A frame from the client, on the event loop.
    fileprivate func received(_ frame: WebSocketFrame) {
        switch frame.opcode {
        case .text, .binary:
            guard state.value.fragments == nil else { return failProtocol() }
            if frame.fin {
                deliver(frame.opcode, frame.data)
            } else {
                state.value.fragments = (frame.opcode, 1, frame.data)
            }
        case .continuation:
            guard var fragments = state.value.fragments, fragments.count < Self.maximumFragments else {
                return failProtocol()
            }
            state.value.fragments = nil
            var data = frame.data
            fragments.data.writeBuffer(&data)
            fragments.count += 1
            if frame.fin {
                deliver(fragments.opcode, fragments.data)
            } else {
                state.value.fragments = fragments
            }
        case .ping:
            guard frame.fin, frame.data.readableBytes <= 125 else { return failProtocol() }
            write(.pong, frame.data, promise: nil)
        case .pong:
            state.value.awaitingPong = false
        case .connectionClose:
            if state.value.closing {
                // The answer to our close: the handshake is done.
                channel.close(promise: nil)
            } else {
                // The peer's close: answered with its code, then the connection closes.
                var data = frame.data
                let code = data.readWebSocketErrorCode() ?? .normalClosure
                close(code: code).whenComplete { _ in self.channel.close(promise: nil) }
            }
        default:
            failProtocol()
        }
    }

    private func deliver(_ opcode: WebSocketOpcode, _ data: ByteBuffer) {
        guard !state.value.closing else { return }
        if opcode == .text {
            state.value.onText(self, String(buffer: data))
        } else {
            state.value.onBinary(self, data)
        }
    }

    /// A frame out of the protocol's order: 1002, and the connection closes once that is written.
    private func failProtocol() {
        fail(.protocolError)
    }

    /// Sends a close frame with `code` and closes the connection once it is written, without
    /// waiting for the peer's answer: nothing more it sends can be read. On the event loop.
    fileprivate func fail(_ code: WebSocketErrorCode) {
        state.value.fragments = nil
        close(code: code).whenComplete { _ in self.channel.close(promise: nil) }
    }

    /// Once the connection closed: nothing is held for it any more (the handlers hold the stream,
    /// which holds this socket).
    fileprivate func closed() {
        state.value.pings?.cancel()
        state.value.pings = nil
        state.value.onText = { _, _ in }
        state.value.onBinary = { _, _ in }
        state.value.fragments = nil
    }
}

/// Hands the client's frames to its `StreamSocket`; the last inbound handler of a stream's
/// connection.
final class StreamSocketHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame

    private let socket: StreamSocket

    private init(socket: StreamSocket) {
        self.socket = socket
    }

    /// Sets up a connection just upgraded (NIO's upgrader added the frame decoder and encoder;
    /// `ClientFrameUnmasker` and `MessageSizeLimiter` come before this): the frame writer just
    /// before NIO's encoder, so that its frames still pass TLS, and this handler last. Vapor's idle
    /// timer comes off the connection: the socket's pings keep watch over it instead (a peer that
    /// misses one is closed), and the timer allocated a promise for every frame written. On the
    /// channel's event loop.
    static func install(on channel: any Channel) throws -> StreamSocket {
        let pipeline = channel.pipeline.syncOperations
        if let idle = try? pipeline.handler(type: IdleStateHandler.self) {
            pipeline.removeHandler(idle, promise: nil)
        }
        let writer = StreamFrameWriter()
        try pipeline.addHandler(writer, position: .before(try pipeline.handler(type: WebSocketFrameEncoder.self)))
        let socket = StreamSocket(channel: channel, writer: writer)
        try channel.pipeline.syncOperations.addHandler(StreamSocketHandler(socket: socket))
        return socket
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        socket.received(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        socket.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A frame the decoder could not read (too large, a bad header): nothing more can be read.
        switch error as? NIOWebSocketError {
        case .invalidFrameLength?: socket.fail(.messageTooLarge)
        case .fragmentedControlFrame?, .multiByteControlFrameLength?: socket.fail(.protocolError)
        case nil: socket.fail(.unexpectedServerError)
        }
    }
}
