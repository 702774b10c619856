import Crypto
import Foundation

/// Where a session's fresh secrets come from: new X25519 ratchet and base keys, and the X-Wing
/// encapsulation of a session start.
///
/// ``system`` is the only source for real sessions. ``fixed(seed:encapsulation:)`` exists so the
/// handshake and ratchet can be pinned by known-answer tests: swift-crypto does not expose X-Wing's
/// derandomised encapsulation, so a test supplies a recorded `(ciphertext, shared secret)` pair whose
/// decapsulation it checks separately.
public struct SessionEntropy: Sendable {
    let newKey: @Sendable () throws -> Curve25519.KeyAgreement.PrivateKey
    let encapsulate: @Sendable (XWingMLKEM768X25519.PublicKey) throws -> (ciphertext: Data, sharedSecret: [UInt8])

    /// The operating system's random number generator.
    public static let system = SessionEntropy(
        newKey: { Curve25519.KeyAgreement.PrivateKey() },
        encapsulate: { key in
            let result = try key.encapsulate()
            return (result.encapsulated, result.sharedSecret.withUnsafeBytes { Array($0) })
        })

    /// Deterministic keys for tests: the n-th key is HKDF-SHA256(seed, info: "key" ‖ u32 n).
    /// Never use it for real messages.
    public static func fixed(seed: [UInt8], encapsulation: (ciphertext: Data, sharedSecret: [UInt8])) -> SessionEntropy
    {
        let counter = KeyCounter()
        return SessionEntropy(
            newKey: {
                var info = Array("key".utf8)
                info.appendBigEndian(counter.next())
                let bytes = HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: SymmetricKey(data: seed), info: info, outputByteCount: 32)
                return try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: bytes)
            },
            encapsulate: { _ in encapsulation })
    }

    init(
        newKey: @escaping @Sendable () throws -> Curve25519.KeyAgreement.PrivateKey,
        encapsulate:
            @escaping @Sendable (XWingMLKEM768X25519.PublicKey) throws -> (ciphertext: Data, sharedSecret: [UInt8])
    ) {
        self.newKey = newKey
        self.encapsulate = encapsulate
    }
}

/// The counter behind ``SessionEntropy/fixed(seed:encapsulation:)``.
private final class KeyCounter: @unchecked Sendable {
    // Only tests use it; the lock keeps it correct if one is shared across tasks anyway.
    private let lock = NSLock()
    private var value: UInt32 = 0
    func next() -> UInt32 {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}
