import NIOCore
import NIOWebSocket

/// RFC 6455 §5.3 masking (XOR with a 4-byte key, repeated), eight bytes at a time. NIO's
/// `ByteBuffer.webSocketMask` goes one byte at a time with a modulo and a bounds-checked key
/// lookup for each, and every client frame is masked. Masking and unmasking are the same operation.
public enum WebSocketMask {
    /// XORs `bytes` in place with `key`, starting at the key's byte `offset % 4` (the position of
    /// `bytes` in the frame's payload).
    /// - Parameters:
    ///   - key: the frame's masking key.
    ///   - bytes: the payload bytes to mask or unmask.
    ///   - offset: how many payload bytes come before `bytes` in the frame.
    public static func apply(_ key: WebSocketMaskingKey, to bytes: UnsafeMutableRawBufferPointer, offset: Int = 0) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        // The key laid out in memory as the payload's first eight bytes meet it: the same on
        // either byte order.
        var pattern: UInt64 = 0
        withUnsafeMutableBytes(of: &pattern) { word in
            for index in 0..<8 { word[index] = key[(index + offset) & 3] }
        }
        let count = bytes.count
        var index = 0
        while index + 8 <= count {
            let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            base.storeBytes(of: word ^ pattern, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < count {
            bytes[index] ^= key[(index + offset) & 3]
            index += 1
        }
    }

    /// `buffer`'s readable bytes masked (or unmasked) with `key`; the buffer is copied only if its
    /// storage is shared, as `ByteBuffer` does for any write.
    /// - Parameters:
    ///   - key: the frame's masking key.
    ///   - buffer: the payload.
    ///   - offset: how many payload bytes come before `buffer` in the frame.
    public static func apply(_ key: WebSocketMaskingKey, to buffer: inout ByteBuffer, offset: Int = 0) {
        buffer.withUnsafeMutableReadableBytes { apply(key, to: $0, offset: offset) }
    }
}

/// Unmasks each frame a client sends as soon as it is decoded (with `WebSocketMask`), so that
/// nothing after it unmasks again, and closes the connection with 1002 (protocol error) on a
/// frame that is not masked: RFC 6455 §5.1 says a server must, and NIO's decoder lets it pass.
final class ClientFrameUnmasker: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        var frame = unwrapInboundIn(data)
        guard let key = frame.maskKey else {
            closing = true
            var reason = context.channel.allocator.buffer(capacity: 2)
            reason.write(webSocketErrorCode: .protocolError)
            let closed = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)), promise: closed)
            let channel = context.channel
            closed.futureResult.whenComplete { _ in channel.close(promise: nil) }
            return
        }
        var extensionBytes = 0
        if var extensionData = frame.extensionData {
            extensionBytes = extensionData.readableBytes
            WebSocketMask.apply(key, to: &extensionData)
            frame.extensionData = extensionData
        }
        var payload = frame.data
        WebSocketMask.apply(key, to: &payload, offset: extensionBytes)
        frame.data = payload
        frame.maskKey = nil
        context.fireChannelRead(wrapInboundOut(frame))
    }
}
