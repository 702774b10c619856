import Foundation

/// How much a symbol holds and its Reed-Solomon error correction.
extension QRCode {
    // MARK: Capacity (ISO/IEC 18004 table 9)

    static let eccCodewordsPerBlock: [[Int]] = [
        [
            -1, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28,
            30,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
        [
            -1, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28,
            28,
            28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
        ],
        [
            -1, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28,
            30,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
        [
            -1, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30,
            30,
            30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
        ],
    ]
    static let errorCorrectionBlocks: [[Int]] = [
        [
            -1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17,
            18,
            19, 19, 20, 21, 22, 24, 25,
        ],
        [
            -1, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28,
            29, 31,
            33, 35, 37, 38, 40, 43, 45, 47, 49,
        ],
        [
            -1, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38,
            40,
            43, 45, 48, 51, 53, 56, 59, 62, 65, 68,
        ],
        [
            -1, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42,
            45, 48,
            51, 54, 57, 60, 63, 66, 70, 74, 77, 81,
        ],
    ]

    /// Modules left for data and error correction once the function patterns are drawn.
    static func rawDataModules(_ version: Int) -> Int {
        var result = (16 * version + 128) * version + 64
        if version >= 2 {
            let alignments = version / 7 + 2
            result -= (25 * alignments - 10) * alignments - 55
            if version >= 7 { result -= 36 }
        }
        return result
    }

    static func dataCodewords(_ version: Int, _ correction: ErrorCorrection) -> Int {
        rawDataModules(version) / 8 - eccCodewordsPerBlock[correction.rawValue][version]
            * errorCorrectionBlocks[correction.rawValue][version]
    }

    // MARK: Error correction (Reed-Solomon over GF(256), polynomial 0x11D)

    func interleaved(_ data: [UInt8]) -> [UInt8] {
        let blockCount = Self.errorCorrectionBlocks[correction.rawValue][version]
        let eccLength = Self.eccCodewordsPerBlock[correction.rawValue][version]
        let raw = Self.rawDataModules(version) / 8
        let shortBlocks = blockCount - raw % blockCount
        let shortLength = raw / blockCount
        let divisor = Self.reedSolomonDivisor(eccLength)
        var blocks: [[UInt8]] = []
        var offset = 0
        for index in 0..<blockCount {
            let dataLength = shortLength - eccLength + (index < shortBlocks ? 0 : 1)
            var block = Array(data[offset..<offset + dataLength])
            offset += dataLength
            let ecc = Self.reedSolomonRemainder(block, divisor)
            if index < shortBlocks { block.append(0) }  // a placeholder, skipped below
            blocks.append(block + ecc)
        }
        var result: [UInt8] = []
        for column in 0..<blocks[0].count {
            for (index, block) in blocks.enumerated() where column != shortLength - eccLength || index >= shortBlocks {
                result.append(block[column])
            }
        }
        return result
    }

    static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var z = 0
        for shift in stride(from: 7, through: 0, by: -1) {
            z = (z << 1) ^ ((z >> 7) * 0x11D)
            z ^= ((Int(y) >> shift) & 1) * Int(x)
        }
        return UInt8(z & 0xFF)
    }

    static func reedSolomonDivisor(_ degree: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for index in 0..<degree {
                result[index] = multiply(result[index], root)
                if index + 1 < degree { result[index] ^= result[index + 1] }
            }
            root = multiply(root, 0x02)
        }
        return result
    }

    static func reedSolomonRemainder(_ data: [UInt8], _ divisor: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: divisor.count)
        for byte in data {
            let factor = byte ^ result.removeFirst()
            result.append(0)
            for index in 0..<result.count { result[index] ^= multiply(divisor[index], factor) }
        }
        return result
    }
}
