import Foundation

/// Everything the lab measured for one algorithm.
public struct AlgorithmAnalysis: Sendable {
    public let algorithm: KeystreamAlgorithm
    public let battery: NISTBattery
    public let bytes: ByteStatistics
    public let avalanche: KeyAvalanche
    public let bias: InitialByteBias
    public let seconds: Double

    /// Runs the whole battery for one algorithm.
    /// - Parameter progress: called with short status lines (for a terminal).
    public static func run(
        _ algorithm: KeystreamAlgorithm, configuration: LabConfiguration, progress: (String) -> Void = { _ in }
    ) throws -> AlgorithmAnalysis {
        let start = Date()
        var battery = NISTBattery()
        let keys = configuration.derivedKeys("battery", count: configuration.keys)
        var histogram = [UInt8]()
        histogram.reserveCapacity(keys.count * configuration.bytesPerKey)
        for (index, key) in keys.enumerated() {
            let stream = try algorithm.keystream(key: key, count: configuration.bytesPerKey)
            battery.add(BitSequence(bytes: stream))
            histogram += stream
            progress("\(algorithm.rawValue): NIST battery, key \(index + 1)/\(keys.count)")
        }
        let bytes = ByteStatistics(histogram)
        progress("\(algorithm.rawValue): key avalanche")
        let avalanche = try KeyAvalanche(
            algorithm: algorithm, keys: configuration.derivedKeys("avalanche", count: configuration.avalancheKeys),
            length: configuration.avalancheLength)
        progress("\(algorithm.rawValue): initial-byte biases over \(configuration.biasKeys) keys")
        let bias = try InitialByteBias(
            algorithm: algorithm, keys: configuration.derivedKeys("bias", count: configuration.biasKeys))
        return AlgorithmAnalysis(
            algorithm: algorithm, battery: battery, bytes: bytes, avalanche: avalanche, bias: bias,
            seconds: Date().timeIntervalSince(start))
    }
}
