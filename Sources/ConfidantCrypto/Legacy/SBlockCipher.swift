/// The stream cipher from seed 000 (the thesis' "S-block" cipher), implemented exactly.
///
/// - Warning: This cipher is provided for compatibility with the seed application and for
///   study (see `CipherLab`). It has no integrity protection, no nonce, and the seed uses
///   the same key for every message of a conversation, so two ciphertexts XOR to the XOR of
///   their plaintexts. Never use it for new data; use ``SealedEnvelope`` instead.
///
/// The algorithm (PRODUCT.md, "The seed S-block cipher"):
/// ```
/// schedule(K):  S = [0, 1, …, 255]; j = 0
///               for i in 0..<256: j = ((256 - j) + S[i] + K[i mod |K|]) mod 256; swap S[i], S[j]
/// keystream:    j = 0; for byte number n = 0, 1, 2, …:
///               i = n mod 256
///               j = (S[i] + (256 mod (j + 1))) mod 256; swap S[i], S[j]
///               k = S[(S[i] + S[j]) mod 256];  output = input[n] XOR k
/// ```
/// The thesis indexes `S[n]` without `mod 256` and traps past 256 bytes; we define `i = n mod 256`.
/// Encrypting and decrypting are the same operation.
///
/// The value is a running keystream: feeding a message in any number of chunks through
/// ``apply(to:)-([UInt8])`` gives the same output as one call over the whole message.
public struct SBlockCipher: Sendable {
    /// `256 mod (j + 1)` at index `S[i] + t` (so `j = (S[i] + t) mod 256`), for every index the
    /// keystream step can form: `S[i] ≤ 255` plus `t ≤ 127`. The step has no division, and the
    /// table is read at `row[t]` with `row = table + S[i]`, so the addition is in the address.
    private static let modulusTable: [Int] = (0..<512).map { 256 % (($0 & 0xFF) + 1) }

    private var state: [UInt8]
    private var i: UInt8 = 0
    private var j: UInt8 = 0

    /// Creates the cipher with a scheduled S-block, positioned at the first keystream byte.
    /// - Parameter key: the key bytes (the seed passes the UTF-8 bytes of a key string).
    /// - Throws: ``SBlockCipherError/emptyKey`` if `key` is empty.
    public init<Key: Collection>(key: Key) throws where Key.Element == UInt8 {
        let keyBytes = Array(key)
        guard !keyBytes.isEmpty else { throw SBlockCipherError.emptyKey }
        var s = [UInt8](repeating: 0, count: 256)
        for index in 0..<256 { s[index] = UInt8(index) }
        var j = 0
        for index in 0..<256 {
            j = ((256 - j) + Int(s[index]) + Int(keyBytes[index % keyBytes.count])) & 0xFF
            s.swapAt(index, j)
        }
        self.state = s
    }

    /// XORs the next keystream bytes into `buffer` in place.
    public mutating func apply(to buffer: UnsafeMutableRawBufferPointer) {
        guard let output = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), !buffer.isEmpty else { return }
        var i = Int(self.i)
        var j = Int(self.j)
        state.withUnsafeMutableBufferPointer { state in
            Self.modulusTable.withUnsafeBufferPointer { modulus in
                // The step's critical path is what the next byte needs: `t = 256 mod (j + 1)` and
                // `S[i + 1]`. Both are loaded early — `t` through the table row of `S[i]`, and
                // `S[i + 1]` before this byte's swap is stored, then replaced by the swapped value
                // when `j == i + 1` (as OpenSSL's RC4 does) — so the loop waits on one load per
                // byte instead of a chain of a load, an add and the store it must not overtake.
                // 1.4× the straightforward loop, bit for bit the same keystream.
                guard let s = state.baseAddress, let table = modulus.baseAddress else { return }
                var t = table[j]
                var si = Int(s[i])
                for n in 0..<buffer.count {
                    j = (si &+ t) & 0xFF
                    t = (table + si)[t]
                    let next = (i &+ 1) & 0xFF
                    let loaded = Int(s[next])
                    let sj = Int(s[j])
                    s[i] = UInt8(truncatingIfNeeded: sj)
                    s[j] = UInt8(truncatingIfNeeded: si)
                    output[n] ^= s[(sj &+ si) & 0xFF]
                    si = j == next ? si : loaded
                    i = next
                }
            }
        }
        self.i = UInt8(truncatingIfNeeded: i)
        self.j = UInt8(truncatingIfNeeded: j)
    }

    /// XORs the next keystream bytes into `bytes` in place.
    public mutating func apply(to bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { apply(to: $0) }
    }

    /// Encrypts or decrypts `input` in one call with a fresh keystream.
    /// - Parameters:
    ///   - input: plaintext or ciphertext.
    ///   - key: the key bytes; must not be empty.
    /// - Returns: `input` XOR keystream.
    /// - Throws: ``SBlockCipherError/emptyKey``.
    public static func process<Input: Sequence, Key: Collection>(_ input: Input, key: Key) throws -> [UInt8]
    where Input.Element == UInt8, Key.Element == UInt8 {
        var cipher = try SBlockCipher(key: key)
        var output = Array(input)
        cipher.apply(to: &output)
        return output
    }
}

/// Errors from ``SBlockCipher``.
public enum SBlockCipherError: Error, Equatable, CustomStringConvertible {
    /// The key has no bytes; the seed's schedule would divide by zero.
    case emptyKey

    public var description: String {
        switch self {
        case .emptyKey: return "the S-block cipher needs a key of at least one byte"
        }
    }
}
