import Foundation

extension Data {
    /// Appends `value` big-endian, as the binary stream frames write integers (they are read
    /// with ConfidantCrypto's `ByteReader`).
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
