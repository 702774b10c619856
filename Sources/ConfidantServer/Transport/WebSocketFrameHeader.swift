import NIOCore
import NIOWebSocket

extension ByteBuffer {
    /// Writes a final frame's header (RFC 6455 §5.2): FIN and `opcode`, then the mask bit and
    /// `length` in its shortest form. A masked frame's four-byte key comes next, from the caller.
    /// The relay's frames (`StreamFrameWriter`) and relay-load's client frames share it.
    public mutating func writeWebSocketFrameHeader(_ opcode: WebSocketOpcode, length: Int, masked: Bool) {
        let mask: UInt8 = masked ? 0x80 : 0
        writeInteger(0x80 | UInt8(webSocketOpcode: opcode))
        switch length {
        case 0...125:
            writeInteger(mask | UInt8(length))
        case 126...0xFFFF:
            writeInteger(mask | 126)
            writeInteger(UInt16(length))
        default:
            writeInteger(mask | 127)
            writeInteger(UInt64(length))
        }
    }
}
