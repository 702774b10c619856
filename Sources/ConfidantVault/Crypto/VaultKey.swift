import ConfidantCrypto
import Crypto
import Foundation

/// The vault's data key: 256 random bits that encrypt everything in the vault, kept only
/// wrapped by a key derived from the passphrase.
///
/// Wrapped form (version 1, 90 bytes), stored in the vault database and in every backup manifest:
/// ```
/// "CFVK" | u8 version=1 | u8 log2N | u32 r | u32 p | 16 salt | 12 nonce | 32 ciphertext | 16 tag
/// ```
/// wrapping key = scrypt(passphrase, salt, N, r, p, 32); AES-256-GCM with the first 42 bytes as AAD.
public struct VaultKey: Sendable {
    let key: SymmetricKey

    /// A fresh random vault key.
    public static func generate() -> VaultKey { VaultKey(key: SymmetricKey(size: .bits256)) }

    init(key: SymmetricKey) { self.key = key }

    /// A key from its 32 bytes: an attachment's key, as the encrypted message that carries it
    /// holds it (docs/PROTOCOL.md §8). A vault's own key never leaves the vault unwrapped.
    /// - Throws: `VaultError.corrupted` for anything but 32 bytes.
    public init(rawRepresentation bytes: Data) throws {
        guard bytes.count == 32 else { throw VaultError.corrupted("a media key must be 32 bytes, not \(bytes.count)") }
        key = SymmetricKey(data: bytes)
    }

    /// The key's 32 bytes, for a key that travels inside an encrypted message (an attachment's).
    public var rawRepresentation: Data { key.withUnsafeBytes { Data($0) } }

    static let magic = Array("CFVK".utf8)
    static let headerCount = 4 + 1 + 1 + 4 + 4 + 16 + 12
    /// The size of a wrapped key in bytes.
    public static let wrappedCount = headerCount + 32 + 16

    /// Wraps the key under a passphrase. Changing the passphrase is wrapping again: the data is untouched.
    public func wrapped(passphrase: String, parameters: ScryptParameters) throws -> Data {
        var header = Self.magic + [1, parameters.log2N]
        header.appendBigEndian(parameters.r)
        header.appendBigEndian(parameters.p)
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        let nonce = AES.GCM.Nonce()
        header += salt
        header += Array(nonce)
        let wrappingKey = try parameters.deriveKey(passphrase: passphrase, salt: salt)
        let box = try key.withUnsafeBytes { raw in
            try AES.GCM.seal(Array(raw), using: wrappingKey, nonce: nonce, authenticating: header)
        }
        return Data(header) + box.ciphertext + box.tag
    }

    /// Unwraps a stored key.
    /// - Throws: ``VaultError/wrongPassphrase`` or ``VaultError/corrupted(_:)``.
    public static func unwrap<Bytes: DataProtocol>(_ wrapped: Bytes, passphrase: String) throws -> VaultKey {
        let bytes = Array(wrapped)
        guard bytes.count == wrappedCount, Array(bytes[0..<4]) == magic else {
            throw VaultError.corrupted("the wrapped vault key is not in a format this Confidant reads")
        }
        guard bytes[4] == 1 else { throw VaultError.corrupted("vault key format version \(bytes[4]) is unknown") }
        let parameters = try scryptParameters(of: bytes)
        let salt = bytes[14..<30]
        let nonceBytes = bytes[30..<42]
        let wrappingKey = try parameters.deriveKey(passphrase: passphrase, salt: salt)
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonceBytes), ciphertext: bytes[42..<74], tag: bytes[74..<90])
            return VaultKey(
                key: SymmetricKey(
                    data: try AES.GCM.open(box, using: wrappingKey, authenticating: bytes[0..<headerCount])))
        } catch {
            throw VaultError.wrongPassphrase
        }
    }

    /// The scrypt parameters a wrapped key was made with.
    public static func scryptParameters<Bytes: DataProtocol>(of wrapped: Bytes) throws -> ScryptParameters {
        let bytes = Array(wrapped)
        guard bytes.count >= 14 else { throw VaultError.corrupted("the wrapped vault key is truncated") }
        let r = bytes[6..<10].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let p = bytes[10..<14].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        do { return try ScryptParameters(log2N: bytes[5], r: r, p: p) } catch {
            throw VaultError.corrupted("\(error)")
        }
    }

    /// A subkey for one purpose, so text, media and manifests never share a key.
    func derived(_ purpose: String, salt: [UInt8] = []) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: key, salt: salt, info: Array("Confidant vault \(purpose) v1".utf8), outputByteCount: 32)
    }
}
