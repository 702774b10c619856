import Foundation

/// SP 800-22 §2.5 Binary matrix rank test: linear dependence among fixed-length substrings.
public enum MatrixRankTest {
    /// - Parameters:
    ///   - rows: M (32 in the standard; at most 64).
    ///   - columns: Q (32 in the standard; at most 64).
    /// - Returns: the P-value, or `nil` when the sequence holds no complete matrix.
    public static func pValue(_ s: BitSequence, rows m: Int = 32, columns q: Int = 32) -> Double? {
        let matrices = s.count / (m * q)
        guard matrices > 0, m <= 64, q <= 64 else { return nil }
        var fullRank = 0
        var oneLess = 0
        s.bits.withUnsafeBufferPointer { bits in
            for index in 0..<matrices {
                var rowsBits = [UInt64](repeating: 0, count: m)
                for r in 0..<m {
                    var row: UInt64 = 0
                    let base = index * m * q + r * q
                    for c in 0..<q { row = row << 1 | UInt64(bits[base + c]) }
                    rowsBits[r] = row
                }
                let rank = rankGF2(&rowsBits, columns: q)
                if rank == min(m, q) { fullRank += 1 } else if rank == min(m, q) - 1 { oneLess += 1 }
            }
        }
        let r = min(m, q)
        return pValue(
            fullRank: fullRank, oneLess: oneLess, matrices: matrices,
            pFull: probability(rank: r, m: m, q: q), pOneLess: probability(rank: r - 1, m: m, q: q))
    }

    /// The χ² step of §2.5 from the rank counts and the class probabilities.
    static func pValue(fullRank: Int, oneLess: Int, matrices: Int, pFull: Double, pOneLess: Double) -> Double {
        let pRest = 1 - pFull - pOneLess
        let n = Double(matrices)
        let rest = Double(matrices - fullRank - oneLess)
        let chiSquared =
            pow(Double(fullRank) - pFull * n, 2) / (pFull * n)
            + pow(Double(oneLess) - pOneLess * n, 2) / (pOneLess * n)
            + pow(rest - pRest * n, 2) / (pRest * n)
        return exp(-chiSquared / 2)
    }

    /// The probability that a random M×Q binary matrix has rank r (SP 800-22 §3.5).
    static func probability(rank r: Int, m: Int, q: Int) -> Double {
        var product = 1.0
        for i in 0..<r {
            product *= (1 - pow(2, Double(i - q))) * (1 - pow(2, Double(i - m))) / (1 - pow(2, Double(i - r)))
        }
        return pow(2, Double(r * (q + m - r) - m * q)) * product
    }

    /// Gaussian elimination over GF(2) on rows stored as the low `columns` bits of each word.
    static func rankGF2(_ rows: inout [UInt64], columns: Int) -> Int {
        var rank = 0
        for column in stride(from: columns - 1, through: 0, by: -1) {
            let mask: UInt64 = 1 << UInt64(column)
            guard let pivot = (rank..<rows.count).first(where: { rows[$0] & mask != 0 }) else { continue }
            rows.swapAt(rank, pivot)
            for other in 0..<rows.count where other != rank && rows[other] & mask != 0 { rows[other] ^= rows[rank] }
            rank += 1
            if rank == rows.count { break }
        }
        return rank
    }
}
