import Crypto
import Foundation

/// The PQXDH-style handshake that starts a session, from either side.
extension RatchetSession {
    /// Starts a session as initiator from a peer device's verified prekey bundle.
    public static func initiate(
        from me: PrivateIdentity, to peer: PublicIdentity, bundle: PrekeyBundle,
        entropy: SessionEntropy = .system
    ) throws(SessionError) -> RatchetSession {
        try bundle.verify(for: peer)
        do {
            let signedPrekey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: bundle.signedPrekey.publicKey)
            let kemPrekey = try XWingMLKEM768X25519.PublicKey(rawRepresentation: bundle.kemPrekey.publicKey)
            let oneTime = try bundle.oneTimePrekey.map {
                try Curve25519.KeyAgreement.PublicKey(rawRepresentation: $0.publicKey)
            }
            let base = try entropy.newKey()
            var secrets = [UInt8](repeating: 0xFF, count: 32)
            secrets += try dh(me.x25519Key, signedPrekey)
            secrets += try dh(base, peer.x25519Key)
            secrets += try dh(base, signedPrekey)
            if let oneTime { secrets += try dh(base, oneTime) }
            let encapsulation = try entropy.encapsulate(kemPrekey)
            secrets += encapsulation.sharedSecret
            let sessionKey = handshakeKey(secrets)
            let start = SessionStart(
                baseKey: base.publicKey.rawRepresentation, signedPrekeyID: bundle.signedPrekey.id,
                kemPrekeyID: bundle.kemPrekey.id, oneTimePrekeyID: bundle.oneTimePrekey?.id,
                kemCiphertext: encapsulation.ciphertext)
            let ratchet = try entropy.newKey()
            let (root, chain) = sessionKey.advanced(by: try dh(ratchet, signedPrekey))
            return RatchetSession(
                associatedData: binding(initiator: me.publicIdentity, responder: peer), baseKey: Array(start.baseKey),
                rootKey: root, sendingRatchetKey: ratchet, remoteRatchetKey: Array(bundle.signedPrekey.publicKey),
                sendingChain: chain, pendingStart: start)
        } catch let error as SessionError {
            throw error
        } catch {
            throw SessionError.invalidKey("\(error)")
        }
    }

    /// Rebuilds the session a start message describes, as responder. Does not erase the one-time
    /// prekey: the caller does that once the first message opens.
    static func respond(
        to start: SessionStart, as me: PrivateIdentity, from peer: PublicIdentity,
        prekeys: DevicePrekeys
    ) throws(SessionError) -> RatchetSession {
        let signedPrekey = try prekeys.signedPrekey(start.signedPrekeyID)
        let kemPrekey = try prekeys.kemPrekey(start.kemPrekeyID)
        let oneTime = try start.oneTimePrekeyID.map { id throws(SessionError) in try prekeys.oneTimePrekey(id) }
        do {
            let base = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: start.baseKey)
            var secrets = [UInt8](repeating: 0xFF, count: 32)
            secrets += try dh(signedPrekey, peer.x25519Key)
            secrets += try dh(me.x25519Key, base)
            secrets += try dh(signedPrekey, base)
            if let oneTime { secrets += try dh(oneTime, base) }
            secrets += try kemPrekey.decapsulate(start.kemCiphertext).withUnsafeBytes { Array($0) }
            return RatchetSession(
                associatedData: binding(initiator: peer, responder: me.publicIdentity), baseKey: Array(start.baseKey),
                rootKey: handshakeKey(secrets), sendingRatchetKey: signedPrekey, remoteRatchetKey: nil,
                sendingChain: nil, pendingStart: nil)
        } catch {
            // An invalid base key or KEM ciphertext: the start was not made for these prekeys.
            throw SessionError.tampered
        }
    }

    /// Binds the identities' keys and device ids, not their signatures: Ed25519 signatures are
    /// randomised on Apple platforms, and the binding must not differ between the two ends.
    static func binding(initiator: PublicIdentity, responder: PublicIdentity) -> [UInt8] {
        var hash = SHA256()
        hash.update(data: bindingContext)
        hash.update(data: initiator.serialized.dropLast(64))
        hash.update(data: responder.serialized.dropLast(64))
        return Array(hash.finalize())
    }

    /// The first root key, from the handshake's secrets.
    static func handshakeKey(_ secrets: [UInt8]) -> RootKey {
        RootKey(
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: secrets), salt: [UInt8](repeating: 0, count: 32),
                info: handshakeInfo, outputByteCount: 32
            ).withUnsafeBytes { Array($0) })
    }
}
