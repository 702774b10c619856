import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

@testable import ConfidantServer

/// A stream's connection on the server: frames written whole next to the socket with one flush
/// per event-loop turn, and the WebSocket protocol — fragments, pings, the closing handshake —
/// kept by `StreamSocket`.
@Suite("Stream socket and frame writer")
struct StreamFrameWriterTests {
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

    /// A connected channel set up as an upgraded stream's, with what its handlers were given.
    private final class Connection: Sendable {
        let channel: EmbeddedChannel
        let socket: StreamSocket
        private let received = Received()
        var texts: [String] { received.texts.withLock { $0 } }
        var binaries: [[UInt8]] { received.binaries.withLock { $0 } }

        private final class Received: Sendable {
            let texts = Mutex<[String]>([])
            let binaries = Mutex<[[UInt8]]>([])
        }

        /// `nearSocket`: handlers between the connection's stream handlers and the socket (TLS).
        init(nearSocket: [any ChannelHandler] = []) throws {
            channel = EmbeddedChannel()
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
            // As the upgrade leaves it: Vapor's idle timer, then NIO's frame encoder (the tests hand
            // in frames, not the bytes its decoder reads).
            for handler in nearSocket { try channel.pipeline.syncOperations.addHandler(handler) }
            try channel.pipeline.syncOperations.addHandler(IdleStateHandler(allTimeout: .seconds(120)))
            try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
            socket = try StreamSocketHandler.install(on: channel)
            socket.onText { [received] _, text in received.texts.withLock { $0.append(text) } }
            socket.onBinary { [received] _, data in
                received.binaries.withLock { $0.append(Array(data.readableBytesView)) }
            }
        }

        func receive(_ opcode: WebSocketOpcode, _ bytes: [UInt8], fin: Bool = true) throws {
            try channel.writeInbound(WebSocketFrame(fin: fin, opcode: opcode, data: ByteBuffer(bytes: bytes)))
        }

        /// The frames written so far, parsed: (fin, opcode byte, payload).
        func written() throws -> [(fin: Bool, opcode: UInt8, payload: [UInt8])] {
            channel.embeddedEventLoop.run()
            var frames: [(Bool, UInt8, [UInt8])] = []
            while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
                while buffer.readableBytes >= 2 {
                    let first = buffer.readInteger(as: UInt8.self) ?? 0
                    let second = buffer.readInteger(as: UInt8.self) ?? 0
                    #expect(second & 0x80 == 0, "a server frame is never masked")
                    var length = Int(second & 0x7F)
                    if length == 126 {
                        length = Int(buffer.readInteger(as: UInt16.self) ?? 0)
                    } else if length == 127 {
                        length = Int(buffer.readInteger(as: UInt64.self) ?? 0)
                    }
                    let payload = buffer.readBytes(length: length)
                    frames.append((first & 0x80 != 0, first & 0x0F, try #require(payload)))
                }
                #expect(buffer.readableBytes == 0, "a frame cut short")
            }
            return frames
        }
    }

    @Test("three frames written and flushed in one turn go out with one flush, in order")
    func coalesces() throws {
        let counter = FlushCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(StreamFrameWriter(), position: .first)
        for text in ["a", "b", "c"] { channel.writeAndFlush(Self.buffer(text), promise: nil) }
        // Nothing is out before the queued flush runs.
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        channel.embeddedEventLoop.run()
        #expect(counter.flushes == 3)  // the counter sits behind the writer, at the tail
        var out: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { out.append(String(buffer: buffer)) }
        #expect(out == ["a", "b", "c"])
        _ = try channel.finish()
    }

    @Test("flushes reaching the socket: one per turn, however many frames")
    func oneFlushPerTurn() throws {
        let atSocket = FlushCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(StreamFrameWriter())
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
        try channel.pipeline.syncOperations.addHandler(StreamFrameWriter())
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(Self.buffer("last words"), promise: written)
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
        #expect(throws: Never.self) { try written.futureResult.wait() }
        #expect(try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == "last words")
    }

    @Test("frames carry their length in the short, 16-bit and 64-bit forms, header and payload in one buffer")
    func frameLengths() throws {
        let connection = try Connection()
        for length in [0, 5, 125, 126, 200, 65_535, 65_536, 70_000] {
            let text = String(repeating: "x", count: length)
            connection.socket.send(text)
            let frames = try connection.written()
            #expect(frames.count == 1)
            #expect(frames.first?.fin == true && frames.first?.opcode == 0x1)
            #expect(frames.first?.payload == Array(text.utf8), "length \(length)")
        }
        connection.socket.send(binary: ByteBuffer(bytes: [1, 2, 3]))
        let binary = try connection.written()
        #expect(binary.first?.opcode == 0x2 && binary.first?.payload == [1, 2, 3])
    }

    /// Marks what passes it, as TLS would encrypt it.
    private final class Marker: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            var buffer = unwrapOutboundIn(data)
            buffer.writeString("+marked")
            context.write(wrapOutboundOut(buffer), promise: promise)
        }
    }

    @Test("frames pass the handlers next to the socket (TLS), and Vapor's idle timer is off the connection")
    func framesPassTLS() throws {
        let connection = try Connection(nearSocket: [Marker()])
        #expect(throws: (any Error).self) {
            try connection.channel.pipeline.syncOperations.handler(type: IdleStateHandler.self)
        }
        connection.socket.send("hi")
        connection.channel.embeddedEventLoop.run()
        let out = try #require(try connection.channel.readOutbound(as: ByteBuffer.self))
        #expect(Array(out.readableBytesView) == [0x81, 2] + Array("hi+marked".utf8))
    }

    @Test("a message in one frame or in fragments reaches its handler once, whole")
    func messagesAndFragments() throws {
        let connection = try Connection()
        try connection.receive(.text, Array("{\"cursors\":[1]}".utf8))
        try connection.receive(.binary, [1, 2], fin: false)
        try connection.receive(.continuation, [3], fin: false)
        try connection.receive(.continuation, [4, 5])
        try connection.receive(.text, Array("hel".utf8), fin: false)
        try connection.receive(.continuation, Array("lo".utf8))
        #expect(connection.texts == ["{\"cursors\":[1]}", "hello"])
        #expect(connection.binaries == [[1, 2, 3, 4, 5]])
        #expect(connection.channel.isActive)
    }

    @Test("out of order: a continuation with nothing to continue, or a new message inside one, is 1002 and the end")
    func protocolErrors() throws {
        for frames in [[(WebSocketOpcode.continuation, true)], [(.text, false), (.binary, true)]] {
            let connection = try Connection()
            for (opcode, fin) in frames { try connection.receive(opcode, [0x41], fin: fin) }
            let written = try connection.written()
            #expect(written.map(\.opcode) == [0x8])
            var code = ByteBuffer(bytes: written.first?.payload ?? [])
            #expect(code.readWebSocketErrorCode() == .protocolError)
            #expect(!connection.channel.isActive)
            #expect(connection.texts.isEmpty && connection.binaries.isEmpty)
        }
    }

    @Test("a ping is answered with a pong carrying its payload")
    func answersPings() throws {
        let connection = try Connection()
        try connection.receive(.ping, [7, 8, 9])
        let written = try connection.written()
        #expect(written.count == 1 && written.first?.opcode == 0xA && written.first?.payload == [7, 8, 9])
    }

    @Test("pings every interval; a peer that answers stays, one that does not is disconnected")
    func pingsAndTimesOut() throws {
        let connection = try Connection()
        let loop = connection.channel.embeddedEventLoop
        connection.socket.startPinging(every: .seconds(30))
        loop.advanceTime(by: .seconds(30))
        #expect(try connection.written().map(\.opcode) == [0x9])
        try connection.receive(.pong, [])
        loop.advanceTime(by: .seconds(30))
        #expect(try connection.written().map(\.opcode) == [0x9])
        #expect(connection.channel.isActive)
        // No pong this time: gone at the next ping.
        loop.advanceTime(by: .seconds(30))
        #expect(!connection.channel.isActive)
    }

    @Test("the peer's close is answered with its code, then the connection closes")
    func peerCloses() throws {
        let connection = try Connection()
        var payload = ByteBuffer()
        payload.write(webSocketErrorCode: .goingAway)
        try connection.receive(.connectionClose, Array(payload.readableBytesView))
        let written = try connection.written()
        #expect(written.map(\.opcode) == [0x8])
        var code = ByteBuffer(bytes: written.first?.payload ?? [])
        #expect(code.readWebSocketErrorCode() == .goingAway)
        #expect(!connection.channel.isActive)
    }

    @Test("closing: a close frame, nothing sent after it, and the connection ends at the peer's answer or the timeout")
    func closes() throws {
        for peerAnswers in [true, false] {
            let connection = try Connection()
            connection.socket.close(code: .unknown(4401))
            let refused = connection.channel.eventLoop.makePromise(of: Void.self)
            connection.socket.send("too late", promise: refused)
            #expect(throws: (any Error).self) { try refused.futureResult.wait() }
            let written = try connection.written()
            #expect(written.map(\.opcode) == [0x8])
            var code = ByteBuffer(bytes: written.first?.payload ?? [])
            #expect(code.readWebSocketErrorCode() == .unknown(4401))
            #expect(connection.channel.isActive)
            // Messages after our close are not handed on.
            try connection.receive(.text, Array("late".utf8))
            #expect(connection.texts.isEmpty)
            if peerAnswers {
                try connection.receive(.connectionClose, [0x03, 0xE8])
            } else {
                connection.channel.embeddedEventLoop.advanceTime(by: StreamSocket.closeTimeout)
            }
            #expect(!connection.channel.isActive)
        }
    }
}
