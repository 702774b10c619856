import Crypto

/// The cipher suite of an envelope, by its one-byte wire id.
public enum EnvelopeSuite: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// RFC 9180 HPKE, Auth mode, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-256-GCM. The default.
    case p256AES256GCM = 0x01
    /// RFC 9180 HPKE, Auth mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305.
    case x25519ChaChaPoly = 0x02
    /// HPKE Base mode with the X-Wing hybrid KEM (ML-KEM-768 + X25519), HKDF-SHA256, AES-256-GCM,
    /// plus a mandatory Ed25519 sender signature (X-Wing has no Auth mode).
    case xwingAES256GCM = 0x03
    /// The seed 000 chat cipher: S-block keyed by the seed's ECDH+HKDF key string. No integrity,
    /// no padding, one keystream per conversation. Only for compatibility and study.
    case seedLegacy = 0xF0

    /// The suite used when none is named.
    public static let `default` = EnvelopeSuite.p256AES256GCM

    /// The name used on the command line and in docs.
    public var name: String {
        switch self {
        case .p256AES256GCM: return "p256-aesgcm"
        case .x25519ChaChaPoly: return "x25519-chachapoly"
        case .xwingAES256GCM: return "xwing-aesgcm"
        case .seedLegacy: return "seed-legacy"
        }
    }

    public var description: String { name }

    /// Looks a suite up by its name.
    public init?(name: String) {
        guard let suite = Self.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = suite
    }

    /// True when every envelope of this suite must carry a sender signature.
    public var requiresSignature: Bool { self == .xwingAES256GCM }

    /// What to tell a user who asks for this suite; `nil` for the safe suites.
    public var warning: String? {
        guard self == .seedLegacy else { return nil }
        return "warning: suite seed-legacy has no integrity protection and encrypts every message of a "
            + "conversation with the same keystream (two ciphertexts XOR to the XOR of their plaintexts). "
            + "Use it only to talk to the seed app or to study the cipher."
    }

    var hpkeCiphersuite: HPKE.Ciphersuite? {
        switch self {
        case .p256AES256GCM: return .P256_SHA256_AES_GCM_256
        case .x25519ChaChaPoly:
            return HPKE.Ciphersuite(kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .chaChaPoly)
        case .xwingAES256GCM: return .XWingMLKEM768X25519_SHA256_AES_GCM_256
        case .seedLegacy: return nil
        }
    }
}
