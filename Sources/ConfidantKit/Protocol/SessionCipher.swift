import ConfidantCrypto
import Foundation

/// The messaging protocol's decisions, without I/O (docs/PROTOCOL.md §3, §9): which envelope
/// version a device gets, when a session starts, and which of a sender's keys opens an envelope.
/// What comes from the network — peers' keys, prekey bundles — is handed in; all state goes
/// through the store protocols, so the caller decides what commits together.
public struct SessionCipher: Sendable {
    /// One device a message is sealed for.
    public struct Recipient: Sendable, Hashable {
        /// The user the device belongs to.
        public let user: UUID
        /// The device's current identity.
        public let identity: PublicIdentity

        /// The device of `user` with `identity`.
        public init(user: UUID, identity: PublicIdentity) {
            self.user = user
            self.identity = identity
            fingerprint = IdentityFingerprint(identity).description
        }

        /// The device's address.
        public var address: DeviceAddress { DeviceAddress(userID: user, deviceID: identity.deviceID) }
        /// What its session is stored under (sealing asks for it three times).
        let fingerprint: String
    }

    /// How a device's prekeys stand, as fetched for a recipient that needed a bundle.
    public enum Bundle: Sendable {
        /// The device published prekeys: start a session with them.
        case prekeys(PrekeyBundle)
        /// The device never published prekeys: it gets a one-shot v1 envelope.
        case noPrekeys
    }

    /// Why sealing stopped.
    public enum SealError: Error, Equatable {
        /// The bundle handed out for this device does not verify against its identity: no session
        /// is started with it (the server may be tampering).
        case untrustedBundle(DeviceAddress, reason: String)
        /// A recipient needed a bundle and none was given.
        case missingBundle(DeviceAddress)
        case envelope(String)
    }

    /// This device's identity.
    public let identity: PrivateIdentity
    /// This device's user.
    public let userID: UUID
    /// Whether envelopes in the seed app's cipher (suite `seed-legacy`: no integrity, one
    /// keystream per conversation) are opened. Off unless a profile enables seed compatibility.
    public let acceptsSeedLegacy: Bool

    /// The cipher of this device.
    public init(identity: PrivateIdentity, userID: UUID, acceptsSeedLegacy: Bool = false) {
        self.identity = identity
        self.userID = userID
        self.acceptsSeedLegacy = acceptsSeedLegacy
    }

    // MARK: Sealing

    /// Whether sealing for `recipient` needs a prekey bundle first: no session started with its
    /// current key can seal.
    public func needsBundle(_ recipient: Recipient, sessions: some SessionStore) throws -> Bool {
        try !(sessions.session(with: recipient.address, fingerprint: recipient.fingerprint)?.canSeal ?? false)
    }

    /// Seals `payload` once per recipient: in its session (started from its bundle when it needs
    /// one), or as a v1 envelope for a device without prekeys. Session changes go to `sessions`
    /// before this returns, so a message key is never used twice. Envelopes in recipient order.
    public func seal(
        _ payload: Data, messageID: UUID, sentAt: Date, for recipients: [Recipient], bundles: [DeviceAddress: Bundle],
        sessions: some SessionStore
    ) throws -> [Data] {
        try recipients.map { recipient in
            var record =
                try sessions.session(with: recipient.address, fingerprint: recipient.fingerprint) ?? SessionRecord()
            if !record.canSeal {
                switch bundles[recipient.address] {
                case nil:
                    throw SealError.missingBundle(recipient.address)
                case .noPrekeys?:
                    return try sealV1(payload, messageID: messageID, sentAt: sentAt, for: recipient)
                case .prekeys(let bundle)?:
                    do {
                        try record.start(from: identity, to: recipient.identity, bundle: bundle)
                    } catch {
                        throw SealError.untrustedBundle(recipient.address, reason: String(describing: error))
                    }
                }
            }
            let envelope: RatchetEnvelope
            do {
                envelope = try record.seal(
                    payload, from: identity, senderUserID: userID, to: recipient.identity,
                    recipientUserID: recipient.user, messageID: messageID, timestamp: sentAt)
            } catch {
                throw SealError.envelope(String(describing: error))
            }
            try sessions.storeSession(record, with: recipient.address, fingerprint: recipient.fingerprint)
            return envelope.serialized
        }
    }

    private func sealV1(_ payload: Data, messageID: UUID, sentAt: Date, for recipient: Recipient) throws -> Data {
        do {
            return try SealedEnvelope.seal(
                payload, from: identity, senderUserID: userID, to: recipient.identity,
                recipientUserID: recipient.user, signed: true, messageID: messageID, timestamp: sentAt
            ).serialized
        } catch {
            throw SealError.envelope(String(describing: error))
        }
    }

    // MARK: Opening

    /// Why an envelope could not be opened, in words for an `[unreadable message: …]` placeholder.
    public struct OpenFailure: Error, Equatable, CustomStringConvertible {
        /// Why, in words for a placeholder.
        public let reason: String
        public var description: String { reason }
    }

    /// Opens an envelope from `sender` (the user the relay reports), stored by the relay at
    /// `storedAt`, with the keys `identities` knows for the sending device: the current one, and
    /// a retired one only for what the relay stored before the key was retired — a removed
    /// device, or a replaced key, cannot send anything new. A v2 envelope moves its session in
    /// `sessions` (and may use up a one-time prekey in `prekeys`); nothing changes on failure.
    public func open(
        _ wire: WireEnvelope, from sender: UUID, storedAt: Date, identities: some IdentityStore,
        sessions: some SessionStore, prekeys: some PrekeyStore
    ) throws -> Result<Data, OpenFailure> {
        guard wire.sender.userID == sender else {
            return .failure(OpenFailure(reason: "the envelope names another sender than the server reports"))
        }
        let known = try identities.knownKeys(of: wire.sender)
        guard !known.isEmpty else { return .failure(OpenFailure(reason: "the sending device's key is unknown")) }
        let candidates = known.filter { key in key.retiredAt.map { storedAt < $0 } ?? true }
        guard !candidates.isEmpty else {
            return .failure(
                OpenFailure(
                    reason:
                        "it came from a device key that was retired (the device was removed or got a new key) before the server received it"
                ))
        }
        switch wire {
        case .ratchet(let envelope):
            return try openSession(envelope, candidates: candidates, sessions: sessions, prekeys: prekeys)
        case .sealed(let envelope):
            // Anyone who can post to this device could otherwise hand it text nobody sealed:
            // seed-legacy has no integrity (docs/SECURITY.md).
            if envelope.header.suite == .seedLegacy, !acceptsSeedLegacy {
                return .failure(
                    OpenFailure(
                        reason:
                            "it uses the seed app's cipher (seed-legacy), which has no integrity protection; this profile does not accept it unless seed compatibility is on"
                    ))
            }
            var lastError: EnvelopeError?
            for candidate in candidates {
                do {
                    return .success(try envelope.open(as: identity, recipientUserID: userID, from: candidate.identity))
                } catch {
                    lastError = error
                }
            }
            let reason =
                switch lastError {
                case .tampered?: "it was sealed for a key this device no longer has (or altered on the way)"
                case .notForThisRecipient?: "it was sealed for another device"
                case let error?: error.description
                case nil: "unknown"
                }
            return .failure(OpenFailure(reason: reason))
        }
    }

    private func openSession(
        _ envelope: RatchetEnvelope, candidates: [KnownKey], sessions: some SessionStore,
        prekeys store: some PrekeyStore
    ) throws -> Result<Data, OpenFailure> {
        var lastError = SessionError.noSession
        for known in candidates {
            let candidate = known.identity
            let fingerprint = known.fingerprint
            var record = try sessions.session(with: envelope.sender, fingerprint: fingerprint) ?? SessionRecord()
            // Only a new start reads the prekeys (a sealed blob of up to a thousand keys, read and
            // compared for every message before); the rest open with none. A device that never had
            // prekeys still opens what it can; a start finds no prekey.
            var prekeys =
                record.needsPrekeys(toOpen: envelope)
                ? try store.devicePrekeys() ?? DevicePrekeys.generate() : DevicePrekeys.none
            let before = prekeys.oneTimeCount
            let plaintext: Data
            do {
                plaintext = try record.open(
                    envelope, as: identity, recipientUserID: userID, from: candidate, prekeys: &prekeys)
            } catch {
                lastError = error
                continue
            }
            try sessions.storeSession(record, with: envelope.sender, fingerprint: fingerprint)
            if prekeys.oneTimeCount != before { try store.storeDevicePrekeys(prekeys) }
            return .success(plaintext)
        }
        return .failure(OpenFailure(reason: Self.reason(lastError)))
    }

    /// What a placeholder says about a session message that cannot be opened.
    static func reason(_ error: SessionError) -> String {
        switch error {
        case .unknownPrekey: "it was sealed for a key this device no longer has (\(error))"
        case .tampered, .noSession: "it belongs to a session this device does not have (or was altered on the way)"
        default: error.description
        }
    }
}
