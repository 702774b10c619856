import ConfidantServer
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// The load generator's WebSocket client: the few things a stream client needs (text and binary
/// frames, ping, close) on NIO directly, written to cost the two cores it shares with the relay as
/// little as the XMPP benchmark's asyncio client costs ejabberd's side. Why not WebSocketKit (which
/// ConfidantKit uses): it flushes every frame it sends — a `writev` system call per message, a
/// third of the generator's CPU at 32 pairs (perf, docs/BENCHMARKS.md) — and masks byte by byte.
/// Here the frames written in one event-loop turn go out with one flush, and they are masked eight
/// bytes at a time (`WebSocketMask`).
///
/// Masking keys come from a fast generator seeded once from the system's, not from the system's
/// for every frame (one `getrandom` call each): RFC 6455 wants unpredictable keys so that a
/// script cannot poison a proxy's cache, and the generator talks to a relay on loopback only.
final class BenchSocket: Sendable {
    typealias TextHandler = @Sendable (BenchSocket, String) -> Void
    typealias BinaryHandler = @Sendable (BenchSocket, ByteBuffer) -> Void

    let channel: any Channel
    private let writer: NIOLoopBound<FrameWriter>

    var eventLoop: any EventLoop { channel.eventLoop }

    private init(channel: any Channel, writer: FrameWriter) {
        self.channel = channel
        self.writer = NIOLoopBound(writer, eventLoop: channel.eventLoop)
    }

    /// Connects to `ws://127.0.0.1:port` + `target` (path and query) and upgrades; the handlers
    /// run on the socket's event loop, one frame at a time.
    /// `source`: the loopback address to connect from (127.0.0.2, …); a source address has
    /// about 28,000 ports for connections to one server port.
    static func connect(
        port: Int, target: String, headers: HTTPHeaders, maximumFrameBytes: Int, from source: String? = nil,
        on group: any EventLoopGroup, onText: @escaping TextHandler, onBinary: @escaping BinaryHandler = { _, _ in }
    ) async throws -> BenchSocket {
        let upgraded = group.any().makePromise(of: BenchSocket.self)
        var bootstrap = ClientBootstrap(group: group)
        if let source { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: source, port: 0)) }
        bootstrap =
            bootstrap
            .channelOption(ChannelOptions.socket(SocketOptionLevel(IPPROTO_TCP), TCP_NODELAY), value: 1)
            .channelInitializer { channel in
                let upgrader = NIOWebSocketClientUpgrader(
                    maxFrameSize: maximumFrameBytes, automaticErrorHandling: false
                ) { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        // Frames from here on: the request's handler would take them for HTTP.
                        _ = channel.pipeline.syncOperations.removeHandler(name: UpgradeRequest.name)
                        let writer = FrameWriter()
                        try channel.pipeline.syncOperations.addHandler(writer, position: .first)
                        let socket = BenchSocket(channel: channel, writer: writer)
                        try channel.pipeline.syncOperations.addHandler(
                            FrameReader(socket: socket, onText: onText, onBinary: onBinary))
                        upgraded.succeed(socket)
                    }
                }
                return channel.eventLoop.makeCompletedFuture {
                    // The relay's first frame may come in the same read as its 101 answer: kept.
                    try channel.pipeline.syncOperations.addHTTPClientHandlers(
                        leftOverBytesStrategy: .forwardBytes,
                        withClientUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                    try channel.pipeline.syncOperations.addHandler(
                        UpgradeRequest(port: port, target: target, headers: headers, upgraded: upgraded),
                        name: UpgradeRequest.name)
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: "127.0.0.1", port: port).get()
        } catch {
            upgraded.fail(error)
            throw error
        }
        do {
            return try await upgraded.futureResult.get()
        } catch {
            try? await channel.close()
            throw error
        }
    }

    /// Sends a text frame; from any thread, in the order of the calls made on one thread.
    func send(text: String) {
        write(.text, ByteBuffer(string: text))
    }

    /// Sends a binary frame.
    func send(binary bytes: some Collection<UInt8> & Sendable) {
        write(.binary, ByteBuffer(bytes: bytes))
    }

    private func write(_ opcode: WebSocketOpcode, _ payload: ByteBuffer) {
        if eventLoop.inEventLoop {
            writer.value.write(opcode, payload)
        } else {
            eventLoop.execute { self.writer.value.write(opcode, payload) }
        }
    }

    /// Sends a close frame and closes the connection.
    func close() async {
        let closed = eventLoop.submit { self.writer.value.close() }
        try? await closed.get()
        try? await channel.closeFuture.get()
    }
}

/// Writes frames as bytes straight to the socket (it sits next to the pipeline's head, before
/// NIO's frame encoder), masked, and flushes once per event-loop turn.
private final class FrameWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?
    private var flushPending = false
    private var keys = MaskKeys()

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func write(_ opcode: WebSocketOpcode, _ payload: ByteBuffer) {
        guard let context else { return }
        let length = payload.readableBytes
        var frame = context.channel.allocator.buffer(capacity: 14 + length)
        frame.writeWebSocketFrameHeader(opcode, length: length, masked: true)
        let key = keys.next()
        frame.writeBytes([key[0], key[1], key[2], key[3]])
        let offset = frame.writerIndex - frame.readerIndex
        var payload = payload
        frame.writeBuffer(&payload)
        frame.withUnsafeMutableReadableBytes { bytes in
            WebSocketMask.apply(key, to: UnsafeMutableRawBufferPointer(rebasing: bytes[offset...]))
        }
        context.write(wrapOutboundOut(frame), promise: nil)
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.assumeIsolated().execute {
            self.flushPending = false
            self.context?.flush()
        }
    }

    func close() {
        guard let context else { return }
        write(.connectionClose, ByteBuffer(bytes: [0x03, 0xE8]))  // 1000, normal closure
        context.flush()
        context.close(promise: nil)
    }
}

/// The frames the relay sends (never fragmented, never masked): text and binary to the handlers,
/// pings answered, a close answered and the connection closed.
private final class FrameReader: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame

    private let socket: BenchSocket
    private let onText: BenchSocket.TextHandler
    private let onBinary: BenchSocket.BinaryHandler

    init(socket: BenchSocket, onText: @escaping BenchSocket.TextHandler, onBinary: @escaping BenchSocket.BinaryHandler)
    {
        self.socket = socket
        self.onText = onText
        self.onBinary = onBinary
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.fin else { return context.close(promise: nil) }
        switch frame.opcode {
        case .text: onText(socket, String(buffer: frame.unmaskedData))
        case .binary: onBinary(socket, frame.unmaskedData)
        case .ping: socket.send(binary: Array(frame.unmaskedData.readableBytesView), opcode: .pong)
        case .connectionClose: context.close(promise: nil)
        default: break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

extension BenchSocket {
    /// A frame of another kind (a pong).
    fileprivate func send(binary bytes: [UInt8], opcode: WebSocketOpcode) {
        write(opcode, ByteBuffer(bytes: bytes))
    }
}

/// Sends the upgrade request once connected; fails `upgraded` if the relay answers anything but
/// the upgrade (a 401 for a bad token) or the connection ends first.
private final class UpgradeRequest: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart
    static let name = "bench-upgrade-request"

    private let port: Int
    private let target: String
    private let headers: HTTPHeaders
    private let upgraded: EventLoopPromise<BenchSocket>

    init(port: Int, target: String, headers: HTTPHeaders, upgraded: EventLoopPromise<BenchSocket>) {
        self.port = port
        self.target = target
        self.headers = headers
        self.upgraded = upgraded
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = headers
        headers.replaceOrAdd(name: "Host", value: "127.0.0.1:\(port)")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            upgraded.fail(BenchSocketError.refused(head.status.code))
        }
        context.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        upgraded.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        upgraded.fail(BenchSocketError.closed)
        context.fireChannelInactive()
    }
}

enum BenchSocketError: Error, CustomStringConvertible {
    case refused(UInt)
    case closed

    var description: String {
        switch self {
        case .refused(let status): "The relay refused the stream with HTTP \(status)."
        case .closed: "The connection closed before the stream was upgraded."
        }
    }
}

/// Masking keys from xorshift64*, seeded from the system's generator once.
private struct MaskKeys {
    private var state = UInt64.random(in: 1...UInt64.max)

    mutating func next() -> WebSocketMaskingKey {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        let value = state &* 0x2545_F491_4F6C_DD1D
        return WebSocketMaskingKey([
            UInt8(truncatingIfNeeded: value >> 56), UInt8(truncatingIfNeeded: value >> 48),
            UInt8(truncatingIfNeeded: value >> 40), UInt8(truncatingIfNeeded: value >> 32),
        ]) ?? .random()
    }
}
