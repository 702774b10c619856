import Foundation

/// UUIDs as text without the C library: Foundation's `uuidString` formats with `snprintf` and
/// `UUID(uuidString:)` parses with `sscanf`, on every message's path. These write and read the
/// same text with a table.
extension UUID {
    /// The form the API, the stores and the documents use: lowercase hex with hyphens (RFC 9562 §4).
    public var canonicalString: String { Self.text(uuid, digits: Self.lowercaseDigits) }

    /// Uppercase hex with hyphens: the same text as Foundation's `uuidString`.
    public var uppercasedString: String { Self.text(uuid, digits: Self.uppercaseDigits) }

    /// Writes the 36 bytes of `uppercasedString` into `output`, for a caller that copies them
    /// anyway (a database binding text) without allocating a `String`. Not generic, so that a
    /// caller in another module pays no generic metadata for it.
    /// - Parameter output: at least 36 bytes.
    public func writeUppercasedUTF8(into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count >= 36, "a UUID's text is 36 bytes")
        Self.write(uuid, digits: Self.uppercaseDigits, into: output.bindMemory(to: UInt8.self))
    }

    /// Parses the 8-4-4-4-12 hex form from its UTF-8 bytes, as `init?(hyphenatedHex:)` does.
    /// - Parameter bytes: the UUID's text as UTF-8.
    public init?(hyphenatedUTF8 bytes: UnsafeBufferPointer<UInt8>) {
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &value) { Self.parse(bytes, into: $0) }
        guard ok else { return nil }
        self.init(uuid: value)
    }

    /// Parses the 8-4-4-4-12 hex form in either case, as `UUID(uuidString:)` does; nil for
    /// anything else (another length, misplaced hyphens, a character that is not hex).
    /// - Parameter text: the UUID's text, e.g. `6ba7b810-9dad-11d1-80b4-00c04fd430c8`.
    public init?(hyphenatedHex text: some StringProtocol) {
        guard
            let uuid = text.utf8.withContiguousStorageIfAvailable({ UUID(hyphenatedUTF8: $0) })
                ?? Array(text.utf8).withUnsafeBufferPointer({ UUID(hyphenatedUTF8: $0) })
        else { return nil }
        self = uuid
    }

    private static let lowercaseDigits = Array("0123456789abcdef".utf8)
    private static let uppercaseDigits = Array("0123456789ABCDEF".utf8)
    /// Where the hyphens go: after the 4th, 6th, 8th and 10th byte.
    private static func hyphenFollows(_ index: Int) -> Bool { index == 3 || index == 5 || index == 7 || index == 9 }

    private static func text(_ value: uuid_t, digits: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: 36) { output in
            write(value, digits: digits, into: output)
            return 36
        }
    }

    /// Writes the 36 characters of `value` into `output` (at least 36 bytes).
    private static func write(_ value: uuid_t, digits: [UInt8], into output: UnsafeMutableBufferPointer<UInt8>) {
        withUnsafeBytes(of: value) { bytes in
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
        }
    }

    private static func parse(_ text: some Collection<UInt8>, into bytes: UnsafeMutableRawBufferPointer) -> Bool {
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
