import ConfidantCrypto
import Foundation
import Testing

@Suite("Time-ordered UUIDs (version 7)")
struct UUIDTimeOrderedTests {
    /// Hands out fixed 64-bit words, then zeros.
    struct FixedWords: RandomNumberGenerator {
        var words: [UInt64]
        mutating func next() -> UInt64 { words.isEmpty ? 0 : words.removeFirst() }
    }

    static func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }

    @Test("RFC 9562 appendix A.6: the example's time and random bits give the example's UUID")
    func rfcExample() {
        var generator = FixedWords(words: [
            Self.word([0x0C, 0xC3, 0x18, 0xC4, 0xDC, 0x0C, 0x0C, 0x07]), Self.word([0x39, 0x8F]),
        ])
        // 0x017F22E279B0 ms: Tuesday, February 22, 2022 2:22:22.00 PM GMT-05:00.
        let id = UUID.timeOrdered(at: Date(timeIntervalSince1970: 1_645_557_742), using: &generator)
        #expect(id.canonicalString == "017f22e2-79b0-7cc3-98c4-dc0c0c07398f")
    }

    @Test("version 7 and the RFC variant whatever the random bits; the time is its first 48 bits")
    func fields() {
        for words: [UInt64] in [[0, 0], [.max, .max], [0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210]] {
            var generator = FixedWords(words: words)
            let date = Date(timeIntervalSince1970: 1_795_000_000.125)
            let bytes = withUnsafeBytes(of: UUID.timeOrdered(at: date, using: &generator).uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 7)
            #expect(bytes[8] >> 6 == 0b10)
            let milliseconds = bytes[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            #expect(milliseconds == 1_795_000_000_125)
        }
        var generator = FixedWords(words: [])
        let early = UUID.timeOrdered(at: Date(timeIntervalSince1970: -5), using: &generator)
        #expect(early.canonicalString.hasPrefix("00000000-0000-7"))
    }

    @Test("ids made in later milliseconds sort after earlier ones, as bytes and as text")
    func ordered() {
        let ids = (0..<1000).map {
            UUID.timeOrdered(at: Date(timeIntervalSince1970: Double(1_795_000_000_000 + $0) / 1000))
        }
        for (earlier, later) in zip(ids, ids.dropFirst()) {
            #expect(earlier.canonicalString < later.canonicalString)
            #expect(earlier.uppercasedString < later.uppercasedString)
            #expect(
                withUnsafeBytes(of: earlier.uuid) { Array($0) }.lexicographicallyPrecedes(
                    withUnsafeBytes(of: later.uuid) { Array($0) }))
        }
    }
}
