import Foundation

/// UUIDs as text without the C library: Foundation's `uuidString` formats with `snprintf` and
/// `UUID(uuidString:)` parses with `sscanf`, which together took about 4 % of the relay's CPU per
/// message (perf, 32 pairs over the stream). These write and read the same text with a table.
extension UUID {
    /// The form the API, the stores and the documents use: lowercase hex with hyphens (RFC 9562 §4).
    public var canonicalString: String { Self.text(uuid, digits: Self.lowercaseDigits) }

    /// Uppercase hex with hyphens: the same text as Foundation's `uuidString`.
    public var uppercasedString: String { Self.text(uuid, digits: Self.uppercaseDigits) }

    /// Parses the 8-4-4-4-12 hex form in either case, as `UUID(uuidString:)` does; nil for
    /// anything else (another length, misplaced hyphens, a character that is not hex).
    /// - Parameter text: the UUID's text, e.g. `6ba7b810-9dad-11d1-80b4-00c04fd430c8`.
    public init?(hyphenatedHex text: some StringProtocol) {
        var bytes = [UInt8](repeating: 0, count: 16)
        let ok =
            text.utf8.withContiguousStorageIfAvailable { Self.parse($0, into: &bytes) }
            ?? Self.parse(Array(text.utf8), into: &bytes)
        guard ok else { return nil }
        self.init(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    private static let lowercaseDigits = Array("0123456789abcdef".utf8)
    private static let uppercaseDigits = Array("0123456789ABCDEF".utf8)
    /// Where the hyphens go: after the 4th, 6th, 8th and 10th byte.
    private static func hyphenFollows(_ index: Int) -> Bool { index == 3 || index == 5 || index == 7 || index == 9 }

    private static func text(_ value: uuid_t, digits: [UInt8]) -> String {
        withUnsafeBytes(of: value) { bytes in
            String(unsafeUninitializedCapacity: 36) { output in
                var position = 0
                for index in 0..<16 {
                    let byte = Int(bytes[index])
                    output[position] = digits[byte >> 4]
                    output[position + 1] = digits[byte & 0x0F]
                    position += 2
                    if hyphenFollows(index) {
                        output[position] = UInt8(ascii: "-")
                        position += 1
                    }
                }
                return position
            }
        }
    }

    private static func parse(_ text: some Collection<UInt8>, into bytes: inout [UInt8]) -> Bool {
        guard text.count == 36 else { return false }
        var characters = text.makeIterator()
        for index in 0..<16 {
            guard let high = characters.next().flatMap(nibble), let low = characters.next().flatMap(nibble) else {
                return false
            }
            bytes[index] = high << 4 | low
            if hyphenFollows(index), characters.next() != UInt8(ascii: "-") { return false }
        }
        return true
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
