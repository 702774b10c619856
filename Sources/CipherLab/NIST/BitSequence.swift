/// A sequence of bits, one per byte (0 or 1), most significant bit of each source byte first,
/// as SP 800-22 reads binary input.
public struct BitSequence: Sendable, Equatable {
    public let bits: [UInt8]

    public var count: Int { bits.count }

    /// From text of '0' and '1' characters (other characters are ignored), as the standard prints examples.
    public init(_ text: String) {
        bits = text.utf8.compactMap { $0 == UInt8(ascii: "0") ? 0 : $0 == UInt8(ascii: "1") ? 1 : nil }
    }

    /// From bits that are already 0 or 1.
    init(bits: [UInt8]) { self.bits = bits }

    /// From bytes, most significant bit first.
    public init<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 8)
        for byte in bytes {
            for shift in stride(from: 7, through: 0, by: -1) { out.append((byte >> UInt8(shift)) & 1) }
        }
        bits = out
    }
}
