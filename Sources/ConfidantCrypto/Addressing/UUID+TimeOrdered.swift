import Foundation

extension UUID {
    /// A version 7 UUID (RFC 9562 §5.7): the Unix time in milliseconds in its first 48 bits, then
    /// the version, 74 random bits and the variant. Ids made one after another sort in the order
    /// they were made, so a database index over them grows at one end: a relay storing thousands
    /// of messages a second then writes a few index pages per commit instead of one random page
    /// per message. The time is in the clear: use these only where whoever reads the id may know
    /// when it was made.
    /// - Parameters:
    ///   - date: the time it carries, to the nearest millisecond; times before 1970 are 0.
    ///   - generator: the source of the random bits.
    public static func timeOrdered(at date: Date = Date(), using generator: inout some RandomNumberGenerator) -> UUID {
        let milliseconds = UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded())) & 0xFFFF_FFFF_FFFF
        let first = generator.next() as UInt64
        let second = generator.next() as UInt64
        // Ten random bytes, lowest byte of `first` first.
        let random =
            (0..<8).map { UInt8(truncatingIfNeeded: first >> (8 * $0)) }
            + (0..<2).map { UInt8(truncatingIfNeeded: second >> (8 * $0)) }
        return UUID(
            uuid: (
                UInt8(truncatingIfNeeded: milliseconds >> 40), UInt8(truncatingIfNeeded: milliseconds >> 32),
                UInt8(truncatingIfNeeded: milliseconds >> 24), UInt8(truncatingIfNeeded: milliseconds >> 16),
                UInt8(truncatingIfNeeded: milliseconds >> 8), UInt8(truncatingIfNeeded: milliseconds),
                0x70 | (random[0] & 0x0F), random[1], 0x80 | (random[2] & 0x3F), random[3],
                random[4], random[5], random[6], random[7], random[8], random[9]
            ))
    }

    /// A version 7 UUID for `date` with random bits from the system's generator.
    public static func timeOrdered(at date: Date = Date()) -> UUID {
        var generator = SystemRandomNumberGenerator()
        return timeOrdered(at: date, using: &generator)
    }
}
