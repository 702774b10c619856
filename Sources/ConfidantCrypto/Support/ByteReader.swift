import Foundation

/// Reads big-endian fields from untrusted bytes; every read is bounds-checked, and a read past the
/// end throws `truncated`: the format's own error (the stream frames), or `TruncatedBytes` for a
/// caller that maps it afterwards. `package`: the binary stream frames (ConfidantAPI) read with it.
package struct ByteReader<Failure: Error> {
    private let bytes: [UInt8]
    private let truncated: Failure
    package private(set) var offset = 0

    package init(_ bytes: some DataProtocol, truncated: Failure) {
        self.bytes = Array(bytes)
        self.truncated = truncated
    }

    /// Reads `bytes` without copying them (the generic initializer copies into an array).
    package init(_ bytes: [UInt8], truncated: Failure) {
        self.bytes = bytes
        self.truncated = truncated
    }

    package var remaining: Int { bytes.count - offset }
    package var isAtEnd: Bool { offset == bytes.count }

    package mutating func read(_ count: Int) throws(Failure) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw truncated }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// `count` bytes as `Data`, copied once (`read` then `Data(…)` would copy twice).
    package mutating func readData(_ count: Int) throws(Failure) -> Data {
        guard count >= 0, count <= remaining else { throw truncated }
        defer { offset += count }
        return Data(bytes[offset..<offset + count])
    }

    // The fixed-size reads below take their bytes in place: an envelope's header is a dozen of
    // them, and the relay reads every envelope's.
    package mutating func readUInt8() throws(Failure) -> UInt8 {
        guard remaining >= 1 else { throw truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    // Each width spelled out rather than one generic over `FixedWidthInteger`: called from another
    // module, a generic runs unspecialized, a protocol witness per shift.
    package mutating func readUInt16() throws(Failure) -> UInt16 {
        UInt16(truncatingIfNeeded: try readBigEndian(byteCount: 2))
    }

    package mutating func readUInt32() throws(Failure) -> UInt32 {
        UInt32(truncatingIfNeeded: try readBigEndian(byteCount: 4))
    }

    package mutating func readUInt64() throws(Failure) -> UInt64 { try readBigEndian(byteCount: 8) }

    private mutating func readBigEndian(byteCount: Int) throws(Failure) -> UInt64 {
        guard byteCount <= remaining else { throw truncated }
        defer { offset += byteCount }
        var value: UInt64 = 0
        for index in offset..<offset + byteCount { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    /// A UUID's 16 bytes, in RFC 9562 order.
    package mutating func readUUID() throws(Failure) -> UUID {
        guard remaining >= 16 else { throw truncated }
        defer { offset += 16 }
        let b = offset
        return UUID(
            uuid: (
                bytes[b], bytes[b + 1], bytes[b + 2], bytes[b + 3], bytes[b + 4], bytes[b + 5], bytes[b + 6],
                bytes[b + 7], bytes[b + 8], bytes[b + 9], bytes[b + 10], bytes[b + 11], bytes[b + 12],
                bytes[b + 13], bytes[b + 14], bytes[b + 15]
            ))
    }

    package mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}

/// A read past the end of the bytes, for readers whose callers map it to their own typed error.
package struct TruncatedBytes: Error {
    package init() {}
}

extension ByteReader where Failure == TruncatedBytes {
    package init(_ bytes: some DataProtocol) { self.init(bytes, truncated: TruncatedBytes()) }
}

// `package`: ConfidantVault writes its binary headers with the same helpers.
extension Array where Element == UInt8 {
    package mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    package mutating func append(_ uuid: UUID) {
        Swift.withUnsafeBytes(of: uuid.uuid) { append(contentsOf: $0) }
    }
}
