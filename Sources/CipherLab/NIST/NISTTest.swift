/// The SP 800-22 rev. 1a tests this lab runs.
public enum NISTTest: String, Sendable, CaseIterable, Codable {
    case frequency = "Frequency (monobit)"
    case blockFrequency = "Block frequency"
    case runs = "Runs"
    case longestRun = "Longest run of ones"
    case matrixRank = "Binary matrix rank"
    case spectral = "Discrete Fourier transform"
    case serial = "Serial"
    case approximateEntropy = "Approximate entropy"
    case cumulativeSums = "Cumulative sums"
}

/// One test's result on one sequence; some tests give more than one P-value (serial, cusum).
public struct NISTResult: Sendable {
    public let test: NISTTest
    public let pValues: [Double]
    /// Why the test could not be applied (sequence too short), instead of P-values.
    public let notApplicable: String?

    init(_ test: NISTTest, _ pValues: Double...) {
        self.test = test
        self.pValues = pValues
        self.notApplicable = nil
    }

    init(_ test: NISTTest, notApplicable reason: String) {
        self.test = test
        self.pValues = []
        self.notApplicable = reason
    }
}
