extension Sequence where Element == UInt8 {
    /// Lower-case hex, as content addresses and digests are written (vault objects, relay blobs).
    package var hexString: String {
        let digits = Array("0123456789abcdef")
        return reduce(into: "") { out, byte in
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
    }
}
