import Crypto
import Foundation

/// The Double Ratchet's root key (32 bytes): each DH ratchet step mixes a shared secret into it
/// and gets the next root key and a new chain key (KDF_RK).
struct RootKey: Sendable, Equatable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    static let info = Array("Confidant ratchet root v1".utf8)

    /// KDF_RK: HKDF-SHA256 with this key as salt over the DH output; 64 bytes → the next root
    /// key, then the chain key.
    func advanced(by dhOutput: [UInt8]) -> (root: RootKey, chain: ChainKey) {
        let out = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: dhOutput), salt: bytes, info: Self.info, outputByteCount: 64
        ).withUnsafeBytes { Array($0) }
        return (RootKey(Array(out[0..<32])), ChainKey(Array(out[32..<64])))
    }
}

/// A sending or receiving chain key (32 bytes): each step gives one message key and the next
/// chain key (KDF_CK).
struct ChainKey: Sendable, Equatable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    private static let messageByte: [UInt8] = [0x01]
    private static let chainByte: [UInt8] = [0x02]

    /// KDF_CK: HMAC-SHA256(chain key, 0x01) is the message key, HMAC-SHA256(chain key, 0x02) the
    /// next chain key. The HMAC key is set up once for both (an `HMAC` is a value).
    func step() -> (messageKey: MessageKey, next: ChainKey) {
        let keyed = HMAC<SHA256>(key: SymmetricKey(data: bytes))
        var message = keyed
        message.update(data: Self.messageByte)
        var next = keyed
        next.update(data: Self.chainByte)
        return (MessageKey(Array(message.finalize())), ChainKey(Array(next.finalize())))
    }
}

/// One message's key (32 bytes), used once: it expands to the AES-256-GCM key and nonce that
/// seal that message.
struct MessageKey: Sendable, Hashable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    static let info = Array("Confidant ratchet message v1".utf8)

    /// HKDF's extract without a salt: HMAC-SHA256 keyed with HashLen zero bytes (RFC 5869 §2.2),
    /// keyed once for every message.
    private static let unsaltedExtract = HMAC<SHA256>(key: SymmetricKey(data: [UInt8](repeating: 0, count: 32)))
    private static let firstBlock: [UInt8] = [0x01]
    private static let secondBlock: [UInt8] = [0x02]

    /// HKDF-SHA256 (no salt, ``info``) to 44 bytes: the AES-256 key, then the 96-bit nonce. RFC
    /// 5869 written out so that each HMAC key is set up once; a test holds it equal to
    /// `HKDF<SHA256>.deriveKey`.
    func cipherKeys() throws -> (key: SymmetricKey, nonce: AES.GCM.Nonce) {
        var extract = Self.unsaltedExtract
        extract.update(data: bytes)
        let expand = HMAC<SHA256>(key: SymmetricKey(data: extract.finalize()))
        var first = expand  // T(1) = HMAC(PRK, info ‖ 0x01)
        first.update(data: Self.info)
        first.update(data: Self.firstBlock)
        let block1 = Array(first.finalize())
        var second = expand  // T(2) = HMAC(PRK, T(1) ‖ info ‖ 0x02); its first 12 bytes are the nonce
        second.update(data: block1)
        second.update(data: Self.info)
        second.update(data: Self.secondBlock)
        let block2 = Array(second.finalize())
        return (SymmetricKey(data: block1), try AES.GCM.Nonce(data: block2[0..<12]))
    }
}
