import Foundation

/// Key avalanche: flip each bit of a key and measure the share of keystream bits that change
/// (ideally 50 %), per keystream byte position, averaged over keys and flipped bits.
public struct KeyAvalanche: Sendable {
    /// Mean fraction of changed bits at each keystream byte position.
    public let byPosition: [Double]
    /// Mean fraction of changed bits over the first `length` bytes for each flipped key bit.
    public let byKeyBit: [Double]
    public let overall: Double
    /// The least-changed position's mean fraction (a weak spot shows here first).
    public var minimum: Double { byPosition.min() ?? 0 }

    public init(algorithm: KeystreamAlgorithm, keys: [[UInt8]], length: Int) throws {
        var positions = [Double](repeating: 0, count: length)
        let keyBits = (keys.first?.count ?? 0) * 8
        var perBit = [Double](repeating: 0, count: keyBits)
        var trials = 0
        for key in keys {
            let base = try algorithm.keystream(key: key, count: length)
            for bit in 0..<keyBits {
                var flipped = key
                flipped[bit / 8] ^= 1 << UInt8(7 - bit % 8)
                let other = try algorithm.keystream(key: flipped, count: length)
                var changedTotal = 0
                for i in 0..<length {
                    let changed = (base[i] ^ other[i]).nonzeroBitCount
                    positions[i] += Double(changed) / 8
                    changedTotal += changed
                }
                perBit[bit] += Double(changedTotal) / Double(8 * length)
                trials += 1
            }
        }
        byPosition = positions.map { $0 / Double(max(trials, 1)) }
        byKeyBit = perBit.map { $0 / Double(max(keys.count, 1)) }
        overall = byPosition.reduce(0, +) / Double(max(length, 1))
    }
}
