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
    public internal(set) var mask = 0
    /// The error correction level.
    public let correction: ErrorCorrection
    var modules: [Bool]
    var isFunction: [Bool]

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
