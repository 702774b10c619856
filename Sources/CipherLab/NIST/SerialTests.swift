import Foundation

/// SP 800-22 §2.11 Serial and §2.12 Approximate entropy tests: frequencies of overlapping m-bit patterns.
public enum SerialTests {
    /// Counts of every overlapping `m`-bit pattern, the sequence wrapped around by m − 1 bits.
    static func patternCounts(_ s: BitSequence, m: Int) -> [Int] {
        guard m > 0 else { return [] }
        var counts = [Int](repeating: 0, count: 1 << m)
        let n = s.count
        let mask = (1 << m) - 1
        s.bits.withUnsafeBufferPointer { bits in
            var window = 0
            for index in 0..<(m - 1) { window = (window << 1 | Int(bits[index % n])) & mask }
            for index in (m - 1)..<(n + m - 1) {
                window = (window << 1 | Int(bits[index % n])) & mask
                counts[window] += 1
            }
        }
        return counts
    }

    static func psiSquared(_ s: BitSequence, m: Int) -> Double {
        guard m > 0 else { return 0 }
        let n = Double(s.count)
        let sum = patternCounts(s, m: m).reduce(0.0) { $0 + Double($1) * Double($1) }
        return sum * Double(1 << m) / n - n
    }

    /// §2.11 Serial test: the two P-values (∇ψ², ∇²ψ²).
    public static func serial(_ s: BitSequence, m: Int) -> (Double, Double) {
        let psiM = psiSquared(s, m: m)
        let psiM1 = psiSquared(s, m: m - 1)
        let psiM2 = psiSquared(s, m: m - 2)
        let delta1 = psiM - psiM1
        let delta2 = psiM - 2 * psiM1 + psiM2
        return (
            SpecialFunctions.igamc(pow(2, Double(m - 2)), delta1 / 2),
            SpecialFunctions.igamc(pow(2, Double(m - 3)), delta2 / 2)
        )
    }

    /// §2.12 Approximate entropy test.
    public static func approximateEntropy(_ s: BitSequence, m: Int) -> Double {
        let n = Double(s.count)
        func phi(_ m: Int) -> Double {
            guard m > 0 else { return 0 }
            return patternCounts(s, m: m).reduce(0.0) { sum, count in
                guard count > 0 else { return sum }
                let c = Double(count) / n
                return sum + c * log(c)
            }
        }
        let apEn = phi(m) - phi(m + 1)
        let chiSquared = 2 * n * (log(2) - apEn)
        return SpecialFunctions.igamc(pow(2, Double(m - 1)), chiSquared / 2)
    }
}
