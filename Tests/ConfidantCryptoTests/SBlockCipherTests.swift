import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

/// The cipher exactly as PRODUCT.md writes it, with `Int` arithmetic and no tables: the
/// reference our table-driven, in-place implementation must match byte for byte.
private func referenceSBlock(_ data: [UInt8], key: [UInt8]) -> [UInt8] {
    var s = Array(0..<256)
    var j = 0
    for i in 0..<256 {
        j = ((256 - j) + s[i] + Int(key[i % key.count])) % 256
        s.swapAt(i, j)
    }
    j = 0
    return data.enumerated().map { n, byte in
        let i = n % 256
        j = (s[i] + (256 % (j + 1))) % 256
        s.swapAt(i, j)
        return byte ^ UInt8(s[(s[i] + s[j]) % 256])
    }
}

@Suite struct SBlockCipherTests {
    @Test func thesisFigure233KnownAnswer() throws {
        let output = try SBlockCipher.process(Array("Привет мир!".utf8), key: Array("key8".utf8))
        #expect(output == [255, 121, 158, 69, 160, 140, 234, 92, 92, 101, 140, 8, 20, 46, 207, 185, 250, 74, 239, 179])
    }

    @Test func decryptIsEncrypt() throws {
        let ciphertext: [UInt8] = [
            255, 121, 158, 69, 160, 140, 234, 92, 92, 101, 140, 8, 20, 46, 207, 185, 250, 74, 239, 179,
        ]
        let plaintext = try SBlockCipher.process(ciphertext, key: Array("key8".utf8))
        #expect(String(decoding: plaintext, as: UTF8.self) == "Привет мир!")
    }

    /// Figure 2.3.4 of the thesis prints [145, 100] for key "key" and bytes [201, 135]; the algorithm
    /// that reproduces figure 2.3.3 (and an independent Python implementation) gives [145, 232].
    /// The thesis's second figure evidently came from another revision of its code; we follow 2.3.3.
    @Test func thesisFigure234FirstByteAgrees() throws {
        let output = try SBlockCipher.process([201, 135], key: Array("key".utf8))
        #expect(output == [145, 232])
    }

    @Test func longInputWrapsIndexModulo256() throws {
        // Computed with an independent Python implementation of the PRODUCT.md pseudocode.
        let zeros = [UInt8](repeating: 0, count: 100_000)
        let keystream = try SBlockCipher.process(zeros, key: Array("key8".utf8))
        let digest = SHA256.hash(data: keystream).map { String(format: "%02x", $0) }.joined()
        #expect(digest == "5610b1b9f953ae3c45f55ad797c51964f79504bcd4e583c793f972fdad88393a")
        #expect(Array(keystream[250..<270]) == hex("96954834c288fa804288122ddb3e47981a9ae113"))
    }

    @Test func matchesReferenceForManyKeysAndLengths() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let key = (0..<Int.random(in: 1...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let data = (0..<Int.random(in: 0...2_000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(try SBlockCipher.process(data, key: key) == referenceSBlock(data, key: key))
        }
    }

    @Test func streamingEqualsOneShotForAnyChunking() throws {
        var rng = SystemRandomNumberGenerator()
        let key = Array("conversation key".utf8)
        let data = (0..<5_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let oneShot = try SBlockCipher.process(data, key: key)
        for _ in 0..<30 {
            var cipher = try SBlockCipher(key: key)
            var output: [UInt8] = []
            var offset = 0
            while offset < data.count {
                let size = min(data.count - offset, Int.random(in: 0...700, using: &rng))
                var chunk = Array(data[offset..<offset + size])
                cipher.apply(to: &chunk)
                output += chunk
                offset += size
            }
            #expect(output == oneShot)
        }
    }

    @Test func emptyKeyIsAnError() {
        #expect(throws: SBlockCipherError.emptyKey) { try SBlockCipher(key: [UInt8]()) }
        #expect(SBlockCipherError.emptyKey.description.contains("at least one byte"))
    }

    @Test func emptyInputGivesEmptyOutput() throws {
        #expect(try SBlockCipher.process([UInt8](), key: [1]) == [])
    }
}

func hex(_ string: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = string.startIndex
    while index < string.endIndex {
        let next = string.index(index, offsetBy: 2)
        bytes.append(UInt8(string[index..<next], radix: 16) ?? 0)
        index = next
    }
    return bytes
}
