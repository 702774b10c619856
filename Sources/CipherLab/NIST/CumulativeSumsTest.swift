import Foundation

/// SP 800-22 §2.13 Cumulative sums (cusum) test: the maximal excursion of the random walk.
public enum CumulativeSumsTest {
    /// - Parameter forward: mode 0 (forward) or mode 1 (backward).
    public static func pValue(_ s: BitSequence, forward: Bool) -> Double {
        let n = s.count
        var sum = 0
        var z = 0
        let walk: [UInt8] = forward ? s.bits : s.bits.reversed()
        for bit in walk {
            sum += Int(bit) * 2 - 1
            z = max(z, abs(sum))
        }
        guard z > 0 else { return 0 }
        let root = Double(n).squareRoot()
        let zd = Double(z)
        var first = 0.0
        // Integer divisions truncate toward zero, exactly as the standard's reference code.
        for k in stride(from: (-n / z + 1) / 4, through: (n / z - 1) / 4, by: 1) {
            first +=
                SpecialFunctions.normalCDF(Double(4 * k + 1) * zd / root)
                - SpecialFunctions.normalCDF(Double(4 * k - 1) * zd / root)
        }
        var second = 0.0
        for k in stride(from: (-n / z - 3) / 4, through: (n / z - 1) / 4, by: 1) {
            second +=
                SpecialFunctions.normalCDF(Double(4 * k + 3) * zd / root)
                - SpecialFunctions.normalCDF(Double(4 * k + 1) * zd / root)
        }
        return 1 - first + second
    }
}
