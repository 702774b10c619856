import Foundation

/// Reads a binary stream frame (`StreamSendFrame`, `StreamDeliveryFrame`) front to back; every
/// read is bounds-checked and a read past the end throws the frame's own `truncated` error.
struct BinaryFrameReader<Failure: Error> {
    private let bytes: Data
    private let truncated: Failure
    private var offset: Int

    init(bytes: Data, truncated: Failure) {
        self.bytes = bytes
        self.truncated = truncated
        offset = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - offset }
    var isAtEnd: Bool { offset == bytes.endIndex }

    mutating func byte() throws(Failure) -> UInt8 {
        guard remaining >= 1 else { throw truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bigEndian<T: FixedWidthInteger>(_: T.Type) throws(Failure) -> T {
        var value: T = 0
        for _ in 0..<MemoryLayout<T>.size { value = value << 8 | T(try byte()) }
        return value
    }

    /// A UUID's 16 bytes, in RFC 9562 order.
    mutating func uuid() throws(Failure) -> UUID {
        guard remaining >= 16 else { throw truncated }
        let b = offset
        defer { offset += 16 }
        return UUID(
            uuid: (
                bytes[b], bytes[b + 1], bytes[b + 2], bytes[b + 3], bytes[b + 4], bytes[b + 5], bytes[b + 6],
                bytes[b + 7], bytes[b + 8], bytes[b + 9], bytes[b + 10], bytes[b + 11], bytes[b + 12],
                bytes[b + 13], bytes[b + 14], bytes[b + 15]
            ))
    }

    mutating func take(_ count: Int) throws(Failure) -> Data {
        guard remaining >= count else { throw truncated }
        defer { offset += count }
        return Data(bytes[offset..<offset + count])
    }
}

extension Data {
    /// Appends `value` big-endian, as the binary stream frames write integers.
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
