import Crypto
import Foundation
import SwiftASN1

/// A device's public identity: a signing key and the agreement keys it signed.
///
/// The signing key (Ed25519) signs the device id and every agreement key, so a relay that
/// swaps an agreement key is detected by anyone who knows the signing key (see safety numbers).
/// Byte layout (version 1), documented in docs/PROTOCOL.md:
/// ```
/// u8 version=1 | 16 device id | 32 Ed25519 | 65 P-256 (X9.63) | 32 X25519 | 1216 X-Wing | 64 signature
/// ```
public struct PublicIdentity: Sendable, Hashable {
    /// The version written by this library.
    public static let currentVersion: UInt8 = 1
    /// The exact serialized size of a version 1 identity.
    public static let serializedCount = 1 + 16 + 32 + 65 + 32 + 1216 + 64
    /// The PEM label of a serialized identity.
    public static let pemLabel = "CONFIDANT PUBLIC IDENTITY"
    static let signatureContext = Array("Confidant identity v1\u{0}".utf8)

    /// The device this identity belongs to.
    public let deviceID: UUID
    /// The Ed25519 key that signed this identity; it verifies the device's prekeys and envelopes.
    public let signingKey: Curve25519.Signing.PublicKey
    /// The P-256 agreement key: the seed's key and the default envelope suite's.
    public let agreementKey: P256.KeyAgreement.PublicKey
    /// The X25519 agreement key.
    public let x25519Key: Curve25519.KeyAgreement.PublicKey
    /// The X-Wing (ML-KEM-768 + X25519, draft-06) agreement key.
    public let xwingKey: XWingMLKEM768X25519.PublicKey
    /// The Ed25519 self-signature over every field before it.
    public let signature: Data
    /// The serialized identity (version 1 layout). Kept rather than built on demand: equality,
    /// hashing and fingerprints use it for every message, and building it encodes every key.
    public let serialized: Data

    init(
        deviceID: UUID, signingKey: Curve25519.Signing.PublicKey, agreementKey: P256.KeyAgreement.PublicKey,
        x25519Key: Curve25519.KeyAgreement.PublicKey, xwingKey: XWingMLKEM768X25519.PublicKey, signature: Data
    ) {
        self.deviceID = deviceID
        self.signingKey = signingKey
        self.agreementKey = agreementKey
        self.x25519Key = x25519Key
        self.xwingKey = xwingKey
        self.signature = signature
        self.serialized =
            Data(
                Self.signedBytes(
                    deviceID: deviceID, signingKey: signingKey, agreementKey: agreementKey, x25519Key: x25519Key,
                    xwingKey: xwingKey)) + signature
    }

    static func signedBytes(
        deviceID: UUID, signingKey: Curve25519.Signing.PublicKey, agreementKey: P256.KeyAgreement.PublicKey,
        x25519Key: Curve25519.KeyAgreement.PublicKey, xwingKey: XWingMLKEM768X25519.PublicKey
    ) -> [UInt8] {
        var out: [UInt8] = [currentVersion]
        out.reserveCapacity(serializedCount)
        out.append(deviceID)
        out += signingKey.rawRepresentation
        out += agreementKey.x963Representation
        out += x25519Key.rawRepresentation
        out += xwingKey.rawRepresentation
        return out
    }

    /// Parses and verifies a serialized identity.
    /// - Throws: ``KeyFormatError`` for a wrong length, an unknown version, an invalid key or a bad signature.
    public init<Bytes: DataProtocol>(serialized bytes: Bytes) throws {
        let all = Array(bytes)
        guard let version = all.first else {
            throw KeyFormatError.wrongLength(expected: Self.serializedCount, actual: 0)
        }
        guard version == Self.currentVersion else { throw KeyFormatError.unsupportedVersion(version) }
        guard all.count == Self.serializedCount else {
            throw KeyFormatError.wrongLength(expected: Self.serializedCount, actual: all.count)
        }
        var reader = ByteReader(all)
        do {
            _ = try reader.readUInt8()
            deviceID = try reader.readUUID()
            signingKey = try Curve25519.Signing.PublicKey(rawRepresentation: reader.read(32))
            agreementKey = try P256.KeyAgreement.PublicKey(x963Representation: reader.read(65))
            x25519Key = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: reader.read(32))
            xwingKey = try XWingMLKEM768X25519.PublicKey(rawRepresentation: reader.read(1216))
            signature = try reader.readData(64)
        } catch is TruncatedBytes {
            throw KeyFormatError.wrongLength(expected: Self.serializedCount, actual: all.count)
        } catch {
            throw KeyFormatError.invalidPoint
        }
        let signed = Self.signatureContext + all[0..<(Self.serializedCount - 64)]
        guard signingKey.isValidSignature(signature, for: signed) else { throw KeyFormatError.badIdentitySignature }
        serialized = Data(all)
    }

    /// The identity as a PEM block labelled `CONFIDANT PUBLIC IDENTITY`.
    public var pemRepresentation: String {
        PEMDocument(type: Self.pemLabel, derBytes: Array(serialized)).pemString
    }

    /// Parses a PEM block labelled `CONFIDANT PUBLIC IDENTITY`.
    public init(pemRepresentation pem: String) throws {
        let document: PEMDocument
        do { document = try PEMDocument(pemString: pem) } catch {
            throw KeyFormatError.invalidPEM("no well-formed PEM block found")
        }
        guard document.discriminator == Self.pemLabel else {
            throw KeyFormatError.invalidPEM("label is \"\(document.discriminator)\", expected \"\(Self.pemLabel)\"")
        }
        try self.init(serialized: document.derBytes)
    }

    /// The P-256 agreement key in the seed app's key-string format.
    public var seedKeyString: String { SeedKeyString.encode(agreementKey.rawRepresentation) }

    /// Two identities are equal when their serialized bytes are.
    public static func == (lhs: PublicIdentity, rhs: PublicIdentity) -> Bool { lhs.serialized == rhs.serialized }
    public func hash(into hasher: inout Hasher) { hasher.combine(serialized) }
}
