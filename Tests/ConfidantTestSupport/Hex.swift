import Foundation

/// Hexadecimal text of bytes, as the Python interop scripts take and print them.
package enum Hex {
    /// Lower-case, two digits a byte, nothing between.
    package static func string(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The bytes of `hex`, up to the first pair that is not two hexadecimal digits.
    package static func bytes(_ hex: String) -> Data {
        var digits = Array(hex.utf8)[...]
        var bytes = Data()
        while digits.count >= 2, let byte = UInt8(String(decoding: digits.prefix(2), as: UTF8.self), radix: 16) {
            bytes.append(byte)
            digits = digits.dropFirst(2)
        }
        return bytes
    }
}
