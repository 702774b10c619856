import Foundation

/// The keystream-reuse attack on the seed's chat encryption: every message of a conversation is
/// encrypted with the same key and the keystream starts afresh, so `c1 ⊕ c2 = m1 ⊕ m2`.
///
/// The AEAD suites are immune: each envelope has a fresh HPKE encapsulation, so its key and
/// nonce are new, and two ciphertexts share no keystream.
public enum KeystreamReuse {
    /// Recovers the second plaintext from two ciphertexts under the same keystream and the first
    /// plaintext: `m2 = c1 ⊕ c2 ⊕ m1`, for as many bytes as all three have.
    public static func recover(known plaintext: [UInt8], ciphertext c1: [UInt8], other c2: [UInt8]) -> [UInt8] {
        let length = min(plaintext.count, c1.count, c2.count)
        return (0..<length).map { plaintext[$0] ^ c1[$0] ^ c2[$0] }
    }

    /// A readable fragment found by dragging a crib across `c1 ⊕ c2`.
    public struct Fragment: Sendable, Equatable {
        /// Byte offset in both messages.
        public let offset: Int
        /// The word assumed to stand at `offset` in one message.
        public let crib: String
        /// What the other message then holds at `offset`.
        public let revealed: String
        /// How much the revealed bytes read like text (mean log-likelihood ratio per byte; > 0 is text-like).
        public let score: Double
    }

    /// Common words to drag, English and Russian, with surrounding spaces where that helps.
    public static let defaultCribs = [
        " the ", " and ", " that ", " you ", " with ", " have ", "this ", " will ", " meet ", " at ",
        " что ", " это ", " как ", " так ", " все ", " привет", "Привет", " встреча", " завтра", " не ",
    ]

    /// Crib-dragging: slides every crib over `c1 ⊕ c2`, keeps positions where the other message
    /// then reads as text, best first.
    /// - Parameter minimumScore: the least ``textScore(_:)`` a revealed fragment needs.
    public static func dragCribs(
        _ c1: [UInt8], _ c2: [UInt8], cribs: [String] = defaultCribs, minimumScore: Double = 0.8, limit: Int = 40
    ) -> [Fragment] {
        let length = min(c1.count, c2.count)
        let x = (0..<length).map { c1[$0] ^ c2[$0] }
        var fragments: [Fragment] = []
        for crib in cribs {
            let bytes = Array(crib.utf8)
            guard bytes.count <= length else { continue }
            for offset in 0...(length - bytes.count) {
                let revealed = (0..<bytes.count).map { x[offset + $0] ^ bytes[$0] }
                let score = textScore(revealed)
                // Keep only valid UTF-8: a window that cuts a Cyrillic letter in half is not a reading.
                guard score >= minimumScore, revealed != bytes, String(validating: revealed, as: UTF8.self) != nil
                else { continue }
                fragments.append(
                    Fragment(
                        offset: offset, crib: crib, revealed: String(decoding: revealed, as: UTF8.self), score: score))
            }
        }
        return Array(fragments.sorted { ($0.score, $0.crib.utf8.count) > ($1.score, $1.crib.utf8.count) }.prefix(limit))
    }

    /// How much more likely `bytes` is as English or Russian text in UTF-8 than as random
    /// printable bytes: the mean per-byte log-likelihood ratio under a unigram letter model
    /// (English letter frequencies; a Cyrillic letter as a whole). Above 0 reads like text;
    /// bytes no text contains score very low.
    static func textScore(_ bytes: [UInt8]) -> Double {
        guard !bytes.isEmpty else { return -.infinity }
        var total = 0.0
        var index = 0
        while index < bytes.count {
            let b = bytes[index]
            if b == 0xD0 || b == 0xD1, index + 1 < bytes.count, (0x80...0xBF).contains(bytes[index + 1]) {
                total += 2 * log(0.045 * 95)  // a typical Russian letter, counted for both of its bytes
                index += 2
                continue
            }
            total += log(characterProbability(b) * 95)
            index += 1
        }
        return total / Double(bytes.count)
    }

    private static let letterFrequencies: [Double] = [  // a…z, per 1,000 letters of English
        82, 15, 28, 43, 127, 22, 20, 61, 70, 2, 8, 40, 24, 67, 75, 19, 1, 60, 63, 91, 28, 10, 24, 2, 20, 1,
    ]

    private static func characterProbability(_ b: UInt8) -> Double {
        switch b {
        case 0x20: return 0.17
        case 0x61...0x7A: return 0.75 * letterFrequencies[Int(b - 0x61)] / 1000
        case 0x41...0x5A: return 0.03 * letterFrequencies[Int(b - 0x41)] / 1000
        case UInt8(ascii: ","), UInt8(ascii: "."): return 0.01
        case 0x30...0x39: return 0.002
        case 0x21...0x7E: return 0.001
        default: return 0.00001
        }
    }
}
