import Foundation

/// SP 800-22 §2.3 and §2.4: oscillation between zeros and ones.
public enum RunsTests {
    /// §2.3 Runs test. Returns 0 when the frequency prerequisite fails, as the standard says.
    public static func runs(_ s: BitSequence) -> Double {
        let n = Double(s.count)
        guard s.count > 1 else { return 0 }
        let pi = Double(s.bits.reduce(0) { $0 + Int($1) }) / n
        guard abs(pi - 0.5) < 2 / n.squareRoot() else { return 0 }
        var v = 1
        s.bits.withUnsafeBufferPointer { bits in
            for k in 0..<(bits.count - 1) where bits[k] != bits[k + 1] { v += 1 }
        }
        let numerator = abs(Double(v) - 2 * n * pi * (1 - pi))
        return erfc(numerator / (2 * (2 * n).squareRoot() * pi * (1 - pi)))
    }

    /// Block length, class boundaries and class probabilities of §2.4 for a sequence length.
    struct LongestRunParameters {
        let blockLength: Int
        let lowest: Int  // runs <= lowest fall in the first class
        let probabilities: [Double]
    }

    static func longestRunParameters(for n: Int) -> LongestRunParameters? {
        if n >= 750_000 {
            return .init(
                blockLength: 10_000, lowest: 10,
                probabilities: [0.0882, 0.2092, 0.2483, 0.1933, 0.1208, 0.0675, 0.0727])
        } else if n >= 6_272 {
            return .init(blockLength: 128, lowest: 4, probabilities: [0.1174, 0.2430, 0.2493, 0.1752, 0.1027, 0.1124])
        } else if n >= 128 {
            return .init(blockLength: 8, lowest: 1, probabilities: [0.2148, 0.3672, 0.2305, 0.1875])
        }
        return nil
    }

    /// §2.4 Test for the longest run of ones in a block; `nil` below 128 bits.
    public static func longestRun(_ s: BitSequence) -> Double? {
        guard let p = longestRunParameters(for: s.count) else { return nil }
        let blocks = s.count / p.blockLength
        let classes = p.probabilities.count
        var counts = [Int](repeating: 0, count: classes)
        s.bits.withUnsafeBufferPointer { bits in
            for block in 0..<blocks {
                var longest = 0
                var current = 0
                for index in (block * p.blockLength)..<((block + 1) * p.blockLength) {
                    if bits[index] == 1 {
                        current += 1
                        longest = max(longest, current)
                    } else {
                        current = 0
                    }
                }
                counts[min(max(longest - p.lowest, 0), classes - 1)] += 1
            }
        }
        let n = Double(blocks)
        let chiSquared = zip(counts, p.probabilities).reduce(0.0) { sum, pair in
            let expected = n * pair.1
            return sum + (Double(pair.0) - expected) * (Double(pair.0) - expected) / expected
        }
        return SpecialFunctions.igamc(Double(classes - 1) / 2, chiSquared / 2)
    }
}
