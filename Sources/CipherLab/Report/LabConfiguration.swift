import Crypto
import Foundation

/// What a lab run measures and how much.
public struct LabConfiguration: Sendable {
    public var algorithms: [KeystreamAlgorithm] = KeystreamAlgorithm.allCases
    /// Keystream bytes per key for the NIST battery (2^20 bits by default).
    public var bytesPerKey = 131_072
    /// Number of keys (sequences) per algorithm; NIST judges uniformity from 55 sequences on.
    public var keys = 80
    /// A single fixed key instead of derived keys (then `keys` is 1).
    public var fixedKey: [UInt8]?
    /// Keys for the initial-byte bias experiment.
    public var biasKeys = 65_536
    /// Keys and keystream length for the avalanche experiment.
    public var avalancheKeys = 8
    public var avalancheLength = 256
    /// Keys are derived from this seed (SHA-256 of seed ‖ purpose ‖ index), so a report can be reproduced.
    public var seed = "confidant-cipher-lab"

    public init() {}

    /// Deterministic pseudo-random keys for one purpose.
    public func derivedKeys(_ purpose: String, count: Int) -> [[UInt8]] {
        if let fixedKey, purpose == "battery" { return [fixedKey] }
        return (0..<count).map { index in
            Array(SHA256.hash(data: Array("\(seed)/\(purpose)/\(index)".utf8)))
        }
    }
}
