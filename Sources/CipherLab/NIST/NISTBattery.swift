import Foundation

/// Runs the SP 800-22 tests on many sequences and judges them as §4.2 says: the proportion of
/// sequences that pass at α = 0.01 must lie in p̂ ± 3√(p̂(1−p̂)/m), and the P-values must be
/// uniform (χ² over ten bins, P ≥ 0.0001).
public struct NISTBattery: Sendable {
    public static let alpha = 0.01

    /// All P-values of one test over the sequences (serial and cusum contribute two per sequence).
    public private(set) var pValues: [NISTTest: [Double]] = [:]
    public private(set) var notApplicable: [NISTTest: String] = [:]
    public private(set) var sequenceCount = 0

    public init() {}

    /// Parameters chosen from the sequence length as the standard recommends.
    public static func results(for s: BitSequence) -> [NISTResult] {
        let n = s.count
        let log2n = Int(log2(Double(max(n, 2))))
        var results: [NISTResult] = [
            NISTResult(.frequency, FrequencyTests.monobit(s)),
            NISTResult(
                .blockFrequency, FrequencyTests.blockFrequency(s, blockLength: n >= 12_800 ? 128 : max(n / 100, 2))),
            NISTResult(.runs, RunsTests.runs(s)),
        ]
        if let p = RunsTests.longestRun(s) {
            results.append(NISTResult(.longestRun, p))
        } else {
            results.append(NISTResult(.longestRun, notApplicable: "needs at least 128 bits"))
        }
        if n >= 38 * 1024, let p = MatrixRankTest.pValue(s) {
            results.append(NISTResult(.matrixRank, p))
        } else {
            results.append(NISTResult(.matrixRank, notApplicable: "needs at least 38,912 bits (38 matrices of 32×32)"))
        }
        // The FFT needs a power-of-two length; a longer odd-sized sequence is tested on its largest
        // power-of-two prefix rather than with an O(n²) transform.
        let fftLength = n > 4096 && n & (n - 1) != 0 ? 1 << log2n : n
        results.append(
            NISTResult(
                .spectral, SpectralTest.pValue(fftLength == n ? s : BitSequence(bits: Array(s.bits.prefix(fftLength)))))
        )
        let serialM = min(16, log2n - 3)
        if serialM >= 2 {
            let (p1, p2) = SerialTests.serial(s, m: serialM)
            results.append(NISTResult(.serial, p1, p2))
        } else {
            results.append(NISTResult(.serial, notApplicable: "sequence too short"))
        }
        let apEnM = min(10, log2n - 6)
        if apEnM >= 1 {
            results.append(NISTResult(.approximateEntropy, SerialTests.approximateEntropy(s, m: apEnM)))
        } else {
            results.append(NISTResult(.approximateEntropy, notApplicable: "sequence too short"))
        }
        results.append(
            NISTResult(
                .cumulativeSums, CumulativeSumsTest.pValue(s, forward: true),
                CumulativeSumsTest.pValue(s, forward: false)))
        return results
    }

    public mutating func add(_ s: BitSequence) {
        sequenceCount += 1
        for result in Self.results(for: s) {
            if let reason = result.notApplicable {
                notApplicable[result.test] = reason
            } else {
                pValues[result.test, default: []] += result.pValues
            }
        }
    }

    /// The verdict for one test.
    public struct Verdict: Sendable {
        public let test: NISTTest
        public let passed: Int
        public let total: Int
        public let acceptableProportion: ClosedRange<Double>
        public let uniformityP: Double
        public let histogram: [Int]

        public var proportion: Double { total == 0 ? 0 : Double(passed) / Double(total) }
        public var proportionOK: Bool { proportion >= acceptableProportion.lowerBound }
        /// NIST asks for at least 55 sequences before judging uniformity.
        public var uniformityJudged: Bool { total >= 55 }
        public var uniformityOK: Bool { !uniformityJudged || uniformityP >= 0.0001 }
        public var passes: Bool { proportionOK && uniformityOK }
    }

    public func verdict(for test: NISTTest) -> Verdict? {
        guard let values = pValues[test], !values.isEmpty else { return nil }
        let m = Double(values.count)
        let p = 1 - Self.alpha
        let margin = 3 * (p * (1 - p) / m).squareRoot()
        var histogram = [Int](repeating: 0, count: 10)
        for value in values { histogram[min(Int(value * 10), 9)] += 1 }
        let expected = m / 10
        let chiSquared = histogram.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
        return Verdict(
            test: test, passed: values.filter { $0 >= Self.alpha }.count, total: values.count,
            acceptableProportion: (p - margin)...min(1, p + margin),
            uniformityP: SpecialFunctions.igamc(4.5, chiSquared / 2), histogram: histogram)
    }
}
