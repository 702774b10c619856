import Crypto
import Foundation

/// A device's private keys: the counterpart of ``PublicIdentity``.
///
/// Private keys never leave the device unencrypted: persist them with ``IdentityKeyFile``.
public struct PrivateIdentity: Sendable {
    /// The device this identity belongs to; kept when the keys are replaced.
    public let deviceID: UUID
    /// The Ed25519 key that signs the public identity, prekeys and envelopes.
    public let signingKey: Curve25519.Signing.PrivateKey
    /// The P-256 agreement key: the seed's key and the default envelope suite's.
    public let agreementKey: P256.KeyAgreement.PrivateKey
    /// The X25519 agreement key (suite `x25519-chachapoly`, session starts).
    public let x25519Key: Curve25519.KeyAgreement.PrivateKey
    /// The X-Wing (ML-KEM-768 + X25519, draft-06) key of the post-quantum suite.
    public let xwingKey: XWingMLKEM768X25519.PrivateKey
    /// The signed public half, computed once.
    public let publicIdentity: PublicIdentity

    /// Generates fresh keys for a new device.
    /// - Parameter deviceID: the device's id; random by default.
    public static func generate(deviceID: UUID = UUID()) throws -> PrivateIdentity {
        try PrivateIdentity(
            deviceID: deviceID, signingKey: .init(), agreementKey: .init(), x25519Key: .init(),
            xwingKey: XWingMLKEM768X25519.PrivateKey.generate())
    }

    /// Assembles an identity from existing keys and signs its public half.
    public init(
        deviceID: UUID, signingKey: Curve25519.Signing.PrivateKey, agreementKey: P256.KeyAgreement.PrivateKey,
        x25519Key: Curve25519.KeyAgreement.PrivateKey, xwingKey: XWingMLKEM768X25519.PrivateKey
    ) throws {
        self.deviceID = deviceID
        self.signingKey = signingKey
        self.agreementKey = agreementKey
        self.x25519Key = x25519Key
        self.xwingKey = xwingKey
        let signed = PublicIdentity.signedBytes(
            deviceID: deviceID, signingKey: signingKey.publicKey, agreementKey: agreementKey.publicKey,
            x25519Key: x25519Key.publicKey, xwingKey: xwingKey.publicKey)
        let signature = try signingKey.signature(for: PublicIdentity.signatureContext + signed)
        self.publicIdentity = PublicIdentity(
            deviceID: deviceID, signingKey: signingKey.publicKey, agreementKey: agreementKey.publicKey,
            x25519Key: x25519Key.publicKey, xwingKey: xwingKey.publicKey, signature: signature)
    }

    /// The 144-byte secret material stored (encrypted) in a key file.
    var secretBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.secretByteCount)
        out.append(deviceID)
        out += signingKey.rawRepresentation
        out += agreementKey.rawRepresentation
        out += x25519Key.rawRepresentation
        out += xwingKey.seedRepresentation
        return out
    }

    static let secretByteCount = 16 + 32 + 32 + 32 + 32

    init(secretBytes: [UInt8]) throws {
        guard secretBytes.count == Self.secretByteCount else {
            throw KeyFormatError.wrongLength(expected: Self.secretByteCount, actual: secretBytes.count)
        }
        var reader = ByteReader(secretBytes)
        do {
            try self.init(
                deviceID: reader.readUUID(),
                signingKey: .init(rawRepresentation: reader.read(32)),
                agreementKey: .init(rawRepresentation: reader.read(32)),
                x25519Key: .init(rawRepresentation: reader.read(32)),
                xwingKey: XWingMLKEM768X25519.PrivateKey(seedRepresentation: reader.read(32), publicKey: nil))
        } catch {
            throw KeyFormatError.invalidScalar
        }
    }
}
