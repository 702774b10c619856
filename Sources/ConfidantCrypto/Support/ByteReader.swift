import Foundation

/// Reads big-endian fields from untrusted bytes; every read is bounds-checked.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init<Bytes: DataProtocol>(_ bytes: Bytes) { self.bytes = Array(bytes) }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset == bytes.count }

    /// Thrown when a read runs past the end; callers map it to their own typed error.
    struct Truncated: Error {}

    mutating func read(_ count: Int) throws(Truncated) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw Truncated() }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// `count` bytes as `Data`, copied once (`read` then `Data(…)` would copy twice).
    mutating func readData(_ count: Int) throws(Truncated) -> Data {
        guard count >= 0, count <= remaining else { throw Truncated() }
        defer { offset += count }
        return Data(bytes[offset..<offset + count])
    }

    // The fixed-size reads below take their bytes in place: an envelope's header is a dozen of
    // them, and an array for each was most of the time the relay spent reading headers (perf).
    mutating func readUInt8() throws(Truncated) -> UInt8 {
        guard remaining >= 1 else { throw Truncated() }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16() throws(Truncated) -> UInt16 { try readBigEndian() }

    mutating func readUInt32() throws(Truncated) -> UInt32 { try readBigEndian() }

    mutating func readUInt64() throws(Truncated) -> UInt64 { try readBigEndian() }

    private mutating func readBigEndian<T: FixedWidthInteger>() throws(Truncated) -> T {
        let size = MemoryLayout<T>.size
        guard size <= remaining else { throw Truncated() }
        defer { offset += size }
        var value: T = 0
        for index in offset..<offset + size { value = value << 8 | T(bytes[index]) }
        return value
    }

    mutating func readUUID() throws(Truncated) -> UUID {
        guard remaining >= 16 else { throw Truncated() }
        defer { offset += 16 }
        let b = offset
        return UUID(
            uuid: (
                bytes[b], bytes[b + 1], bytes[b + 2], bytes[b + 3], bytes[b + 4], bytes[b + 5], bytes[b + 6],
                bytes[b + 7], bytes[b + 8], bytes[b + 9], bytes[b + 10], bytes[b + 11], bytes[b + 12],
                bytes[b + 13], bytes[b + 14], bytes[b + 15]
            ))
    }

    mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
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
