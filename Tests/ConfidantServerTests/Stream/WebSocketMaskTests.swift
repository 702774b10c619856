import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import ConfidantServer

/// Masking eight bytes at a time gives NIO's byte-at-a-time result, and the relay unmasks each
/// client frame once and refuses one that is not masked.
@Suite("WebSocket masking")
struct WebSocketMaskTests {
    /// The key whose bytes on the wire are `bytes`.
    private static func key(_ bytes: UInt8...) throws -> WebSocketMaskingKey {
        try #require(WebSocketMaskingKey(bytes))
    }

    private static func randomBytes(_ count: Int, using generator: inout some RandomNumberGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    @Test("the same bytes as NIOWebSocket's own masking, for every length to 70, every offset, and long payloads")
    func matchesNIO() {
        var generator = SystemRandomNumberGenerator()
        for length in Array(0...70) + [1_279, 1_280, 4_097, 65_536] {
            for offset in 0..<8 {
                let key = WebSocketMaskingKey.random(using: &generator)
                let bytes = Self.randomBytes(length, using: &generator)
                var expected = ByteBuffer(bytes: bytes)
                expected.webSocketMask(key, indexOffset: offset)
                var ours = ByteBuffer(bytes: bytes)
                WebSocketMask.apply(key, to: &ours, offset: offset)
                #expect(ours == expected, "length \(length), offset \(offset)")
                // Masking twice gives the bytes back.
                WebSocketMask.apply(key, to: &ours, offset: offset)
                #expect(Array(ours.readableBytesView) == bytes)
            }
        }
    }

    @Test("a buffer that shares its storage is copied, not changed under its other owner")
    func copiesSharedStorage() throws {
        let original = ByteBuffer(bytes: [1, 2, 3, 4, 5, 6, 7, 8, 9])
        var masked = original
        WebSocketMask.apply(try Self.key(0xff, 0xff, 0xff, 0xff), to: &masked)
        #expect(Array(original.readableBytesView) == [1, 2, 3, 4, 5, 6, 7, 8, 9])
        #expect(Array(masked.readableBytesView) == [1, 2, 3, 4, 5, 6, 7, 8, 9].map { $0 ^ 0xff })
    }

    /// A connected channel with the unmasker, as a stream's connection has it.
    private static func connection() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ClientFrameUnmasker())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return channel
    }

    @Test("a masked client frame goes on unmasked, its key dropped")
    func unmasksClientFrames() throws {
        let channel = try Self.connection()
        let key = try Self.key(0x12, 0x34, 0x56, 0x78)
        var payload = ByteBuffer(string: "a binary send, masked by its client")
        payload.webSocketMask(key)
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .binary, maskKey: key, data: payload))
        let frame = try #require(try channel.readInbound(as: WebSocketFrame.self))
        #expect(frame.maskKey == nil)
        #expect(String(buffer: frame.data) == "a binary send, masked by its client")
        #expect(frame.opcode == .binary && frame.fin)
        #expect(channel.isActive)
        _ = try channel.finish()
    }

    @Test("extension data is unmasked too, and the payload after it from the right key byte")
    func unmasksExtensionData() throws {
        let channel = try Self.connection()
        let key = try Self.key(1, 2, 3, 4)
        let frame = WebSocketFrame(
            fin: true, opcode: .text, maskKey: key, data: ByteBuffer(string: "payload"),
            extensionData: ByteBuffer(string: "ext"))
        // As it arrives: both parts masked as one run of bytes, the extension data first.
        var masked = frame
        var wire = ByteBuffer(string: "extpayload")
        wire.webSocketMask(key)
        masked.extensionData = wire.getSlice(at: 0, length: 3)
        masked.data = try #require(wire.getSlice(at: 3, length: 7))
        try channel.writeInbound(masked)
        let read = try #require(try channel.readInbound(as: WebSocketFrame.self))
        #expect(read.extensionData.map { String(buffer: $0) } == "ext")
        #expect(String(buffer: read.data) == "payload")
        _ = try channel.finish()
    }

    @Test("an unmasked client frame is refused: a close frame with 1002, then the connection closes")
    func refusesUnmaskedFrames() throws {
        let channel = try Self.connection()
        #expect(channel.isActive)
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "{}")))
        #expect(try channel.readInbound(as: WebSocketFrame.self) == nil)
        var close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(close.opcode == .connectionClose)
        #expect(close.data.readWebSocketErrorCode() == .protocolError)
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
        // Nothing after it is taken.
        _ = try? channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer()))
        #expect(try channel.readInbound(as: WebSocketFrame.self) == nil)
    }
}
