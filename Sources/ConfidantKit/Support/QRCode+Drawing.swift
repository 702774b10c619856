import Foundation

/// Placing the modules: finder and timing patterns, the data, masks and their penalty.
extension QRCode {
    // MARK: Drawing

    mutating func setFunction(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    mutating func drawFunctionPatterns() {
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

    func alignmentPositions() -> [Int] {
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

    mutating func drawFormatBits(_ mask: Int) {
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

    mutating func placeCodewords(_ data: [UInt8]) {
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

    mutating func applyMask(_ mask: Int) {
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
    func penaltyScore() -> Int {
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
}
