import ConfidantCrypto
import Crypto
import Foundation
import _CryptoExtras

/// The stream ciphers the lab measures: the seed's S-block and two well-studied controls.
public enum KeystreamAlgorithm: String, Sendable, CaseIterable, Codable {
    case sblock
    case aesCTR = "aes-ctr"
    case chacha20

    /// Human-readable name for reports.
    public var displayName: String {
        switch self {
        case .sblock: return "S-block (seed 000)"
        case .aesCTR: return "AES-256-CTR"
        case .chacha20: return "ChaCha20"
        }
    }

    /// Key length used when the lab draws random keys: 32 bytes for all three (the seed's key
    /// string is 44 bytes of base64 text, i.e. less entropy per byte than random bytes).
    public static let keyByteCount = 32

    /// `count` bytes of keystream for `key`, from the start of the stream (zero nonce and counter
    /// for the controls: the lab varies keys, never nonces).
    public func keystream(key: [UInt8], count: Int) throws -> [UInt8] {
        guard count > 0 else { return [] }
        let zeros = [UInt8](repeating: 0, count: count)
        switch self {
        case .sblock:
            return try SBlockCipher.process(zeros, key: key)
        case .aesCTR:
            let nonce = try AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16))
            return Array(try AES._CTR.encrypt(zeros, using: SymmetricKey(data: Self.sized(key)), nonce: nonce))
        case .chacha20:
            let nonce = try Insecure.ChaCha20CTR.Nonce(data: [UInt8](repeating: 0, count: 12))
            return Array(
                try Insecure.ChaCha20CTR.encrypt(zeros, using: SymmetricKey(data: Self.sized(key)), nonce: nonce))
        }
    }

    /// AES-256 and ChaCha20 take exactly 32 key bytes: shorter user keys are zero-extended,
    /// longer ones hashed, so any `--key` works for every algorithm.
    static func sized(_ key: [UInt8]) -> [UInt8] {
        if key.count == 32 { return key }
        if key.count < 32 { return key + [UInt8](repeating: 0, count: 32 - key.count) }
        return Array(SHA256.hash(data: key))
    }
}
