extension Sequence where Element == UInt8 {
    /// Lower-case hex, as object names and content addresses are written.
    var hexString: String {
        reduce(into: "") { out, byte in
            let digits = Array("0123456789abcdef")
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
    }
}
