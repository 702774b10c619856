/// Padmé padding (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and
/// Communication with PURBs", PETS 2019): rounds a length up so that at most O(log log L)
/// bits of it leak, with at most 12% overhead.
///
/// Framing used inside envelopes: `u32 length ‖ message ‖ zeros`, padded to
/// `max(minimumLength, padme(4 + message.count))` bytes.
public enum Padme {
    /// The smallest padded size, so that all short messages ("ok", "yes", an emoji) look alike.
    public static let minimumLength = 32

    /// The Padmé length for `length`: `length` with its low `E − S` bits rounded up,
    /// where `E = ⌊log2 length⌋` and `S = ⌊log2 E⌋ + 1`.
    public static func paddedLength(_ length: Int) -> Int {
        guard length >= 2 else { return length }
        let e = Int.bitWidth - 1 - length.leadingZeroBitCount
        let s = Int.bitWidth - e.leadingZeroBitCount  // ⌊log2 e⌋ + 1
        let lastBits = e - s
        let mask = (1 << lastBits) - 1
        return (length + mask) & ~mask
    }

    /// Frames and pads a message.
    public static func pad<Bytes: Collection>(_ message: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let framed = 4 + message.count
        let total = max(minimumLength, paddedLength(framed))
        var out: [UInt8] = []
        out.reserveCapacity(total)
        out.appendBigEndian(UInt32(message.count))
        out += message
        out += repeatElement(0, count: total - framed)
        return out
    }

    /// Removes the framing; `nil` if the length field or the padding is malformed: a length past
    /// the end, non-zero padding, or a padded size other than Padmé's for that length (one
    /// message has exactly one padded form).
    public static func unpad<Bytes: Collection>(_ padded: Bytes) -> [UInt8]? where Bytes.Element == UInt8 {
        let bytes = Array(padded)
        guard bytes.count >= 4 else { return nil }
        let length = Int(bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard length <= bytes.count - 4 else { return nil }
        guard bytes.count == max(minimumLength, paddedLength(4 + length)) else { return nil }
        guard bytes[(4 + length)...].allSatisfy({ $0 == 0 }) else { return nil }
        return Array(bytes[4..<(4 + length)])
    }
}
