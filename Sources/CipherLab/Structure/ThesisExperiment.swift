/// The thesis' own "analysis" (seed 000, section 2.4): single-byte keys "A", "B", "C" on the
/// plaintext "A". Reproduced so the report can show what it does and does not say.
public struct ThesisExperiment: Sendable {
    public struct Row: Sendable {
        public let key: String
        public let ciphertext: UInt8
    }

    public let rows: [Row]

    public init() throws {
        rows = try ["A", "B", "C"].map { key in
            Row(
                key: key,
                ciphertext: try KeystreamAlgorithm.sblock.keystream(key: Array(key.utf8), count: 1)[0]
                    ^ UInt8(ascii: "A"))
        }
    }
}
