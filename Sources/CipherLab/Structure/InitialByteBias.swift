import Foundation

/// Biases of the first keystream bytes over many random keys — the kind of distinguisher known
/// for RC4 (Mantin and Shamir: the second byte is 0 with probability 2/256).
public struct InitialByteBias: Sendable {
    public let positions: Int
    public let keys: Int
    /// counts[position][value]
    public let counts: [[Int]]

    public init(algorithm: KeystreamAlgorithm, keys: [[UInt8]], positions: Int = 16) throws {
        var counts = [[Int]](repeating: [Int](repeating: 0, count: 256), count: positions)
        for key in keys {
            let stream = try algorithm.keystream(key: key, count: positions)
            for (position, byte) in stream.enumerated() { counts[position][Int(byte)] += 1 }
        }
        self.positions = positions
        self.keys = keys.count
        self.counts = counts
    }

    /// χ² against uniform for each position (255 degrees of freedom) and its P-value.
    public var chiSquaredP: [Double] {
        let expected = Double(keys) / 256
        return counts.map { row in
            let chi = row.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
            return SpecialFunctions.igamc(127.5, chi / 2)
        }
    }

    /// For each position, the value seen most often, its probability and its z-score against 1/256.
    public var strongest: [(value: Int, probability: Double, z: Double)] {
        let p0 = 1.0 / 256
        let sigma = (p0 * (1 - p0) / Double(max(keys, 1))).squareRoot()
        return counts.map { row in
            let (value, count) = row.enumerated().max { $0.element < $1.element } ?? (0, 0)
            let probability = Double(count) / Double(max(keys, 1))
            return (value, probability, (probability - p0) / sigma)
        }
    }

    /// Positions whose value distribution departs from uniform: χ² P below 0.01 after a
    /// Bonferroni correction for the number of positions (0-based).
    public var biasedPositions: [Int] {
        let threshold = 0.01 / Double(positions)
        return chiSquaredP.enumerated().filter { $0.element < threshold }.map(\.offset)
    }

    /// Probability that keystream byte `position` equals zero.
    public func zeroProbability(at position: Int) -> Double {
        Double(counts[position][0]) / Double(max(keys, 1))
    }
}
