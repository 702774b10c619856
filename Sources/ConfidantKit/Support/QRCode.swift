import Foundation

/// A QR code (ISO/IEC 18004) of some bytes, to show an `otpauth://` enrolment URI or a safety
/// number to a phone's camera: byte mode, versions 1–40, the smallest version that fits.
///
/// Written here because no QR library is among this project's dependencies; the encoding is
/// checked module for module against Python's `qrcode` package (Tests/Interop/qr_check.py).
public struct QRCode: Sendable, Equatable {
    /// How much of the code may be damaged and still read: about 7 %, 15 %, 25 %, 30 %.
    public enum ErrorCorrection: Int, Sendable, CaseIterable {
        case low, medium, quartile, high

        /// The two bits the format information carries.
        var formatBits: Int { [1, 0, 3, 2][rawValue] }
    }

    /// Why a code could not be made.
    public enum EncodingError: Error, Equatable {
        /// More bytes than version 40 holds at this error correction.
        case tooLong(bytes: Int)
    }

    /// Modules per side (21 for version 1, up to 177).
    public let size: Int
    /// The version, 1–40.
    public let version: Int
    /// The mask pattern applied, 0–7.
    public private(set) var mask = 0
    /// The error correction level.
    public let correction: ErrorCorrection
    private var modules: [Bool]
    private var isFunction: [Bool]

    /// Whether the module at column `x`, row `y` is dark.
    public subscript(x x: Int, y y: Int) -> Bool { modules[y * size + x] }

    /// Encodes `text` as UTF-8 bytes.
    /// - Parameters:
    ///   - text: the text to encode.
    ///   - correction: how much of the symbol may be lost and still read.
    ///   - mask: a fixed mask (tests); by default the one the standard's penalty rules pick.
    public init(text: String, correction: ErrorCorrection = .medium, mask: Int? = nil) throws(EncodingError) {
        try self.init(bytes: Array(text.utf8), correction: correction, mask: mask)
    }

    /// Encodes `bytes` in byte mode.
    /// - Parameters:
    ///   - bytes: the bytes to encode.
    ///   - correction: how much of the symbol may be lost and still read.
    ///   - mask: a fixed mask (tests); by default the one the standard's penalty rules pick.
    public init(bytes: [UInt8], correction: ErrorCorrection = .medium, mask: Int? = nil) throws(EncodingError) {
        var chosen: Int?
        for version in 1...40 {
            let countBits = version <= 9 ? 8 : 16
            if 4 + countBits + bytes.count * 8 <= Self.dataCodewords(version, correction) * 8 {
                chosen = version
                break
            }
        }
        guard let version = chosen else { throw .tooLong(bytes: bytes.count) }
        self.version = version
        self.correction = correction
        size = version * 4 + 17
        modules = Array(repeating: false, count: size * size)
        isFunction = Array(repeating: false, count: size * size)

        // The bit stream: mode, count, data, terminator, padding to whole bytes and capacity.
        var bits: [Bool] = []
        func append(_ value: Int, _ count: Int) {
            for shift in stride(from: count - 1, through: 0, by: -1) { bits.append((value >> shift) & 1 == 1) }
        }
        append(0b0100, 4)
        append(bytes.count, version <= 9 ? 8 : 16)
        for byte in bytes { append(Int(byte), 8) }
        let capacity = Self.dataCodewords(version, correction) * 8
        append(0, min(4, capacity - bits.count))
        append(0, (8 - bits.count % 8) % 8)
        var pad = 0xEC
        while bits.count < capacity {
            append(pad, 8)
            pad ^= 0xEC ^ 0x11
        }
        var data = [UInt8](repeating: 0, count: bits.count / 8)
        for (index, bit) in bits.enumerated() where bit { data[index >> 3] |= 1 << (7 - (index & 7)) }

        drawFunctionPatterns()
        placeCodewords(interleaved(data))
        if let mask {
            self.mask = mask
            applyMask(mask)
            drawFormatBits(mask)
        } else {
            var best = (mask: 0, penalty: Int.max)
            for candidate in 0..<8 {
                applyMask(candidate)
                drawFormatBits(candidate)
                let penalty = penaltyScore()
                if penalty < best.penalty { best = (candidate, penalty) }
                applyMask(candidate)  // a mask is its own inverse
            }
            self.mask = best.mask
            applyMask(best.mask)
            drawFormatBits(best.mask)
        }
    }

    // MARK: Capacity (ISO/IEC 18004 table 9)

    private static let eccCodewordsPerBlock: [[Int]] = [
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
    private static let errorCorrectionBlocks: [[Int]] = [
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
    private static func rawDataModules(_ version: Int) -> Int {
        var result = (16 * version + 128) * version + 64
        if version >= 2 {
            let alignments = version / 7 + 2
            result -= (25 * alignments - 10) * alignments - 55
            if version >= 7 { result -= 36 }
        }
        return result
    }

    private static func dataCodewords(_ version: Int, _ correction: ErrorCorrection) -> Int {
        rawDataModules(version) / 8 - eccCodewordsPerBlock[correction.rawValue][version]
            * errorCorrectionBlocks[correction.rawValue][version]
    }

    // MARK: Error correction (Reed-Solomon over GF(256), polynomial 0x11D)

    private func interleaved(_ data: [UInt8]) -> [UInt8] {
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

    private static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var z = 0
        for shift in stride(from: 7, through: 0, by: -1) {
            z = (z << 1) ^ ((z >> 7) * 0x11D)
            z ^= ((Int(y) >> shift) & 1) * Int(x)
        }
        return UInt8(z & 0xFF)
    }

    private static func reedSolomonDivisor(_ degree: Int) -> [UInt8] {
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

    private static func reedSolomonRemainder(_ data: [UInt8], _ divisor: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: divisor.count)
        for byte in data {
            let factor = byte ^ result.removeFirst()
            result.append(0)
            for index in 0..<result.count { result[index] ^= multiply(divisor[index], factor) }
        }
        return result
    }

    // MARK: Drawing

    private mutating func setFunction(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    private mutating func drawFunctionPatterns() {
        for index in 0..<size {
            setFunction(6, index, index % 2 == 0)
            setFunction(index, 6, index % 2 == 0)
        }
        for (x, y) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 where (0..<size).contains(x + dx) && (0..<size).contains(y + dy) {
                    let distance = max(abs(dx), abs(dy))
                    setFunction(x + dx, y + dy, distance != 2 && distance != 4)
                }
            }
        }
        let positions = alignmentPositions()
        for (i, x) in positions.enumerated() {
            for (j, y) in positions.enumerated() {
                let last = positions.count - 1
                if (i == 0 && j == 0) || (i == 0 && j == last) || (i == last && j == 0) { continue }
                for dy in -2...2 {
                    for dx in -2...2 { setFunction(x + dx, y + dy, max(abs(dx), abs(dy)) != 1) }
                }
            }
        }
        drawFormatBits(0)  // reserved now, written for real once the mask is known
        if version >= 7 {
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
            let bits = version << 12 | remainder
            for index in 0..<18 {
                let dark = (bits >> index) & 1 == 1
                let a = size - 11 + index % 3
                let b = index / 3
                setFunction(a, b, dark)
                setFunction(b, a, dark)
            }
        }
    }

    private func alignmentPositions() -> [Int] {
        guard version > 1 else { return [] }
        let count = version / 7 + 2
        let step = version == 32 ? 26 : (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var result = [6]
        var position = size - 7
        var rest: [Int] = []
        for _ in 0..<(count - 1) {
            rest.insert(position, at: 0)
            position -= step
        }
        result += rest
        return result
    }

    private mutating func drawFormatBits(_ mask: Int) {
        let data = correction.formatBits << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        for index in 0...5 { setFunction(8, index, bit(index)) }
        setFunction(8, 7, bit(6))
        setFunction(8, 8, bit(7))
        setFunction(7, 8, bit(8))
        for index in 9..<15 { setFunction(14 - index, 8, bit(index)) }
        for index in 0..<8 { setFunction(size - 1 - index, 8, bit(index)) }
        for index in 8..<15 { setFunction(8, size - 15 + index, bit(index)) }
        setFunction(8, size - 8, true)
    }

    private mutating func placeCodewords(_ data: [UInt8]) {
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for vertical in 0..<size {
                for offset in 0..<2 {
                    let x = right - offset
                    let upward = (right + 1) & 2 == 0
                    let y = upward ? size - 1 - vertical : vertical
                    if !isFunction[y * size + x], index < data.count * 8 {
                        modules[y * size + x] = (data[index >> 3] >> (7 - (index & 7))) & 1 == 1
                        index += 1
                    }
                }
            }
            right -= 2
        }
    }

    private mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] {
                let invert: Bool
                switch mask {
                case 0: invert = (x + y) % 2 == 0
                case 1: invert = y % 2 == 0
                case 2: invert = x % 3 == 0
                case 3: invert = (x + y) % 3 == 0
                case 4: invert = (x / 3 + y / 2) % 2 == 0
                case 5: invert = x * y % 2 + x * y % 3 == 0
                case 6: invert = (x * y % 2 + x * y % 3) % 2 == 0
                default: invert = ((x + y) % 2 + x * y % 3) % 2 == 0
                }
                if invert { modules[y * size + x].toggle() }
            }
        }
    }

    /// The standard's four penalty rules: runs, 2×2 blocks, finder-like patterns, dark balance.
    private func penaltyScore() -> Int {
        var penalty = 0
        func line(_ at: (Int) -> Bool) {
            var run = 1
            var previous = at(0)
            var bits: [Bool] = [previous]
            for index in 1..<size {
                let dark = at(index)
                bits.append(dark)
                if dark == previous {
                    run += 1
                } else {
                    if run >= 5 { penalty += run - 2 }
                    run = 1
                    previous = dark
                }
            }
            if run >= 5 { penalty += run - 2 }
            let pattern: [Bool] = [true, false, true, true, true, false, true]
            for start in 0...(size - 7) where Array(bits[start..<start + 7]) == pattern {
                let before = (max(0, start - 4)..<start).allSatisfy { !bits[$0] } && start >= 4
                let after = (start + 7..<min(size, start + 11)).allSatisfy { !bits[$0] } && start + 11 <= size
                if before || after { penalty += 40 }
            }
        }
        for y in 0..<size { line { self[x: $0, y: y] } }
        for x in 0..<size { line { self[x: x, y: $0] } }
        for y in 0..<(size - 1) {
            for x in 0..<(size - 1) {
                let dark = self[x: x, y: y]
                if dark == self[x: x + 1, y: y], dark == self[x: x, y: y + 1], dark == self[x: x + 1, y: y + 1] {
                    penalty += 3
                }
            }
        }
        // 10 for every 5 % the dark share strays from 50 % (never exactly 50 %: the size is odd).
        let dark = modules.filter { $0 }.count
        let total = size * size
        penalty += ((abs(dark * 20 - total * 10) + total - 1) / total - 1) * 10
        return penalty
    }

    // MARK: Rendering

    /// The code as an SVG image, with the four-module quiet zone the standard asks for.
    public var svg: String {
        var path = ""
        for y in 0..<size {
            for x in 0..<size where self[x: x, y: y] { path += "M\(x + 4),\(y + 4)h1v1h-1z" }
        }
        let side = size + 8
        return
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(side) \(side)\" shape-rendering=\"crispEdges\">"
            + "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/><path d=\"\(path)\" fill=\"#000\"/></svg>"
    }

    /// The code in text for a terminal: two rows per line with half blocks, dark on light.
    public var terminalLines: [String] {
        let side = size + 4
        func dark(_ x: Int, _ y: Int) -> Bool {
            let (cx, cy) = (x - 2, y - 2)
            return (0..<size).contains(cx) && (0..<size).contains(cy) && self[x: cx, y: cy]
        }
        return stride(from: 0, to: side, by: 2).map { y in
            String(
                (0..<side).map { x in
                    switch (dark(x, y), dark(x, y + 1)) {
                    case (false, false): "█"
                    case (true, false): "▄"
                    case (false, true): "▀"
                    case (true, true): " "
                    }
                })
        }
    }
}
