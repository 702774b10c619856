/// Sizes of the media format (docs/PROTOCOL.md §6) an attachment is encrypted in, in both
/// directions.
enum MediaStreamSize {
    static let segment = 65_536, overhead = 25, tag = 16

    static func encrypted(_ plaintext: Int) -> Int {
        overhead + plaintext + max(1, (plaintext + segment - 1) / segment) * tag
    }

    /// The largest plaintext that encrypts to at most `encrypted` bytes.
    static func plaintext(_ encrypted: Int) -> Int {
        let body = max(0, encrypted - overhead)
        let segments = max(1, (body + segment + tag - 1) / (segment + tag))
        return max(0, body - segments * tag)
    }
}
