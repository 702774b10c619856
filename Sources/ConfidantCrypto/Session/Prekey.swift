import Crypto
import Foundation

/// A medium-term prekey published by a device and signed with its identity's Ed25519 key:
/// an X25519 key or an X-Wing (ML-KEM-768 + X25519) key.
///
/// Signed bytes: `"Confidant prekey v1\0" ‖ u8 kind ‖ 16 device id ‖ u32 id ‖ public key`.
public struct SignedPrekey: Sendable, Hashable {
    /// What kind of key a signed prekey is.
    public enum Kind: UInt8, Sendable {
        case x25519 = 1
        case xwing = 2

        /// The length of a public key of this kind.
        public var publicKeyCount: Int { self == .x25519 ? 32 : 1216 }
        var name: String { self == .x25519 ? "signed" : "post-quantum (X-Wing)" }
    }

    static let signatureContext = Array("Confidant prekey v1\u{0}".utf8)

    /// An X25519 or an X-Wing key.
    public let kind: Kind
    public let id: UInt32
    /// The public key (32 bytes for X25519, 1,216 for X-Wing).
    public let publicKey: Data
    /// The device identity's Ed25519 signature over the signed bytes.
    public let signature: Data

    /// Wraps received fields; call ``verify(for:)`` before using the key.
    public init(kind: Kind, id: UInt32, publicKey: Data, signature: Data) {
        self.kind = kind
        self.id = id
        self.publicKey = publicKey
        self.signature = signature
    }

    static func signedBytes(kind: Kind, deviceID: UUID, id: UInt32, publicKey: Data) -> [UInt8] {
        var out = signatureContext + [kind.rawValue]
        out.append(deviceID)
        out.appendBigEndian(id)
        out += publicKey
        return out
    }

    static func sign(kind: Kind, id: UInt32, publicKey: Data, by identity: PrivateIdentity) throws -> SignedPrekey {
        let signature = try identity.signingKey.signature(
            for: signedBytes(kind: kind, deviceID: identity.deviceID, id: id, publicKey: publicKey))
        return SignedPrekey(kind: kind, id: id, publicKey: publicKey, signature: signature)
    }

    /// Checks length and signature against the device's identity.
    /// - Throws: ``SessionError/badPrekeySignature(_:)``.
    public func verify(for identity: PublicIdentity) throws(SessionError) {
        guard publicKey.count == kind.publicKeyCount, signature.count == 64,
            identity.signingKey.isValidSignature(
                signature, for: Self.signedBytes(kind: kind, deviceID: identity.deviceID, id: id, publicKey: publicKey))
        else { throw SessionError.badPrekeySignature(kind.name) }
    }
}

/// A one-time X25519 prekey: used by at most one session start, then erased on both sides.
public struct OneTimePrekey: Sendable, Hashable {
    public let id: UInt32
    /// The X25519 public key (32 bytes).
    public let publicKey: Data

    /// A one-time prekey as published.
    public init(id: UInt32, publicKey: Data) {
        self.id = id
        self.publicKey = publicKey
    }
}

/// What an initiator fetches from the relay to start a session with one device.
public struct PrekeyBundle: Sendable, Hashable {
    /// The device the prekeys belong to.
    public let deviceID: UUID
    /// The device's current signed X25519 prekey.
    public let signedPrekey: SignedPrekey
    /// The device's current signed X-Wing prekey.
    public let kemPrekey: SignedPrekey
    /// Absent when the device has run out; the start is then one DH weaker, as in Signal.
    public let oneTimePrekey: OneTimePrekey?

    /// A bundle as the relay hands it out; call ``verify(for:)`` before starting a session with it.
    public init(deviceID: UUID, signedPrekey: SignedPrekey, kemPrekey: SignedPrekey, oneTimePrekey: OneTimePrekey?) {
        self.deviceID = deviceID
        self.signedPrekey = signedPrekey
        self.kemPrekey = kemPrekey
        self.oneTimePrekey = oneTimePrekey
    }

    /// Checks the bundle belongs to `identity` and both signatures verify.
    public func verify(for identity: PublicIdentity) throws(SessionError) {
        guard deviceID == identity.deviceID else { throw SessionError.bundleMismatch }
        guard signedPrekey.kind == .x25519, kemPrekey.kind == .xwing else {
            throw SessionError.malformed("the bundle's prekeys are of the wrong kinds")
        }
        try signedPrekey.verify(for: identity)
        try kemPrekey.verify(for: identity)
        if let oneTimePrekey, oneTimePrekey.publicKey.count != 32 {
            throw SessionError.malformed("the one-time prekey is \(oneTimePrekey.publicKey.count) bytes, expected 32")
        }
    }
}

/// What a device publishes: its current signed prekeys and new one-time prekeys.
public struct PrekeyUpload: Sendable, Hashable {
    /// The current signed X25519 prekey.
    public let signedPrekey: SignedPrekey
    /// The current signed X-Wing prekey.
    public let kemPrekey: SignedPrekey
    /// One-time prekeys to add to those the relay holds.
    public let oneTimePrekeys: [OneTimePrekey]
}
