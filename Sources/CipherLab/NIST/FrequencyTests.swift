import Foundation

/// SP 800-22 §2.1 and §2.2: the proportion of ones, overall and within blocks.
public enum FrequencyTests {
    /// §2.1 Frequency (monobit) test.
    public static func monobit(_ s: BitSequence) -> Double {
        let n = Double(s.count)
        let sum = s.bits.reduce(0) { $0 + (Int($1) * 2 - 1) }
        return erfc(Double(abs(sum)) / n.squareRoot() / 2.0.squareRoot())
    }

    /// §2.2 Frequency test within a block of `blockLength` bits.
    public static func blockFrequency(_ s: BitSequence, blockLength m: Int) -> Double {
        let blocks = s.count / m
        guard blocks > 0 else { return 0 }
        var chiSquared = 0.0
        s.bits.withUnsafeBufferPointer { bits in
            for block in 0..<blocks {
                var ones = 0
                for index in (block * m)..<((block + 1) * m) { ones += Int(bits[index]) }
                let pi = Double(ones) / Double(m) - 0.5
                chiSquared += pi * pi
            }
        }
        chiSquared *= 4 * Double(m)
        return SpecialFunctions.igamc(Double(blocks) / 2, chiSquared / 2)
    }
}
