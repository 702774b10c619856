import Foundation

/// Byte-level statistics of a keystream: distribution and autocorrelation.
public struct ByteStatistics: Sendable {
    public let count: Int
    public let frequencies: [Int]
    /// χ² of the byte frequencies against uniform (255 degrees of freedom) and its P-value.
    public let chiSquared: Double
    public let chiSquaredP: Double
    /// Bit autocorrelation at byte lags 1…16: z-scores of the number of differing bits between
    /// byte i and byte i + lag (expected 4 per pair, variance 2), and their two-sided P-values.
    public let autocorrelationZ: [Double]
    public let autocorrelationP: [Double]

    public static let lags = 1...16

    /// The byte values furthest from their expected count, with z-scores (count − N/256) / √(N/256).
    public func mostDeviant(_ k: Int) -> [(value: Int, z: Double)] {
        let expected = Double(count) / 256
        return frequencies.enumerated()
            .map { (value: $0.offset, z: (Double($0.element) - expected) / expected.squareRoot()) }
            .sorted { abs($0.z) > abs($1.z) }
            .prefix(k).map { $0 }
    }

    public init(_ bytes: [UInt8]) {
        count = bytes.count
        var frequencies = [Int](repeating: 0, count: 256)
        for byte in bytes { frequencies[Int(byte)] += 1 }
        self.frequencies = frequencies
        let expected = Double(bytes.count) / 256
        chiSquared = frequencies.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
        chiSquaredP = SpecialFunctions.igamc(127.5, chiSquared / 2)
        var zs: [Double] = []
        bytes.withUnsafeBufferPointer { b in
            for lag in Self.lags {
                let pairs = b.count - lag
                guard pairs > 0 else {
                    zs.append(0)
                    continue
                }
                var differing = 0
                for i in 0..<pairs { differing += (b[i] ^ b[i + lag]).nonzeroBitCount }
                zs.append((Double(differing) - 4 * Double(pairs)) / (2 * Double(pairs)).squareRoot())
            }
        }
        autocorrelationZ = zs
        autocorrelationP = zs.map { erfc(abs($0) / 2.0.squareRoot()) }
    }
}
