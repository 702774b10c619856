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

    mutating func readUInt8() throws(Truncated) -> UInt8 { try read(1)[0] }

    mutating func readUInt16() throws(Truncated) -> UInt16 {
        try read(2).reduce(0) { $0 << 8 | UInt16($1) }
    }

    mutating func readUInt32() throws(Truncated) -> UInt32 {
        try read(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func readUInt64() throws(Truncated) -> UInt64 {
        try read(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func readUUID() throws(Truncated) -> UUID {
        let b = try read(16)
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
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
