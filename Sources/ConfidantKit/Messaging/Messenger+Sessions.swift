import ConfidantAPI
import ConfidantCrypto
import Foundation

/// Envelope v2: this device's prekeys on the server, and forward-secret sessions with each peer
/// device (docs/PROTOCOL.md §9). Devices that never published prekeys still get v1 envelopes.
extension Messenger {
    // MARK: Prekeys

    /// Publishes this device's prekeys: the stored ones, or new ones for a new device key (which
    /// also ends every session, since they were bound to the old key).
    func publishPrekeys(newDeviceKey: Bool) async throws {
        var prekeys: DevicePrekeys
        if !newDeviceKey, let stored = try store.prekeys() {
            prekeys = stored
        } else {
            if newDeviceKey { try store.deleteAllSessions() }
            prekeys = try DevicePrekeys.generate()
        }
        if prekeys.needsRotation() { try prekeys.rotate() }
        try store.savePrekeys(prekeys)
        try await upload(prekeys, oneTime: prekeys.allOneTimePrekeys)
        prekeysMaintained = true
    }

    /// Once per instance: rotates the signed prekeys when due and tops up one-time prekeys when the
    /// server runs low or lost them (e.g. a low-water notice arrived while this device was offline).
    func maintainPrekeys() async throws {
        guard !prekeysMaintained else { return }
        guard var prekeys = try store.prekeys() else { return try await publishPrekeys(newDeviceKey: false) }
        let status: Components.Schemas.PrekeyStatus
        switch try await relay.call({ try await $0.prekeyStatus() }) {
        case .ok(let ok): status = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        let published = prekeys.currentIDs
        var fresh: [OneTimePrekey] = []
        var changed = false
        if prekeys.needsRotation() {
            try prekeys.rotate()
            changed = true
        }
        if status.signedPrekeyId != published.map({ Int64($0.signed) }) || status.kemPrekeyId != published.map({ Int64($0.kem) }) {
            // The server lost them (or never had them): publish everything this device holds.
            fresh = prekeys.allOneTimePrekeys
            changed = true
        }
        if status.oneTimePrekeys < status.lowWater {
            fresh += prekeys.addOneTimePrekeys(DevicePrekeys.batchSize)
            changed = true
        }
        if changed {
            try store.savePrekeys(prekeys)
            try await self.upload(prekeys, oneTime: fresh)
        }
        prekeysMaintained = true
    }

    /// Answers a low-water notice: new one-time prekeys, stored before they are published.
    func replenishPrekeys() async throws {
        guard var prekeys = try store.prekeys() else { return try await publishPrekeys(newDeviceKey: false) }
        let fresh = prekeys.addOneTimePrekeys(DevicePrekeys.batchSize)
        try store.savePrekeys(prekeys)
        try await upload(prekeys, oneTime: fresh)
    }

    private func upload(_ prekeys: DevicePrekeys, oneTime: [OneTimePrekey]) async throws {
        // The server takes at most 200 one-time prekeys per upload; send the newest.
        let body = Components.Schemas.PrekeyUpload(try prekeys.upload(signedBy: identity, oneTimePrekeys: Array(oneTime.suffix(200))))
        switch try await relay.call({ try await $0.uploadPrekeys(body: .json(body)) }) {
        case .ok: break
        case .default(let status, let response): throw problem(status, response)
        }
    }

    // MARK: Sealing

    /// Seals `payload` for one device: in a session when the device has published prekeys (starting
    /// one if needed), as a v1 envelope otherwise. Session changes go to `sessions`; the caller
    /// stores them before the envelopes leave, so a message key is never used twice.
    func seal(_ payload: Data, to key: PublicIdentity, user: UUID, messageID: UUID, sentAt: Date,
              sessions: inout [PeerSession]) async throws -> Data {
        let fingerprint = IdentityFingerprint(key).description
        var record = try session(user: user, device: key.deviceID, fingerprint: fingerprint, in: sessions)
        if !record.canSeal {
            guard let wire = try await claimBundle(of: user, device: key.deviceID) else {
                return try SealedEnvelope.seal(payload, from: identity, senderUserID: me, to: key, recipientUserID: user,
                                               signed: true, messageID: messageID, timestamp: sentAt).serialized
            }
            do throws(SessionError) {
                guard let bundle = PrekeyBundle(wire) else { throw SessionError.malformed("the bundle's key ids are out of range") }
                try record.start(from: identity, to: key, bundle: bundle)
            } catch {
                let name = user == me ? "your other device" : (try store.contact(id: user)?.displayName ?? "the recipient")
                throw ConfidantKitError.untrustedPrekeys(name: name, reason: error.description)
            }
        }
        let envelope = try record.seal(payload, from: identity, senderUserID: me, to: key, recipientUserID: user,
                                       messageID: messageID, timestamp: sentAt)
        sessions.update(PeerSession(user: user, device: key.deviceID, fingerprint: fingerprint, record: record))
        return envelope.serialized
    }

    /// The sessions with a device as `pending` (changed in this batch) has them, else as stored,
    /// for the peer key `fingerprint`; empty when neither has one for that key.
    private func session(user: UUID, device: UUID, fingerprint: String, in pending: [PeerSession]) throws -> SessionRecord {
        if let changed = pending.first(where: { $0.user == user && $0.device == device }), changed.fingerprint == fingerprint {
            return changed.record
        }
        return try store.session(user: user, device: device, fingerprint: fingerprint) ?? SessionRecord()
    }

    private func claimBundle(of user: UUID, device: UUID) async throws -> Components.Schemas.PrekeyBundle? {
        let bundles: [Components.Schemas.PrekeyBundle]
        switch try await relay.call({
            try await $0.claimPrekeyBundles(path: .init(userId: user.canonicalString),
                                            query: .init(deviceId: device.canonicalString))
        }) {
        case .ok(let ok): bundles = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        return bundles.first(where: { UUID(uuidString: $0.deviceId) == device })
    }

    // MARK: Opening

    /// Opens a v2 envelope with the sender device's candidate keys (current first), in the
    /// sessions as this batch left them. Returns the plaintext, or the reason it cannot be read.
    func openSession(_ envelope: RatchetEnvelope, candidates: [PublicIdentity], batch: inout SessionBatch) throws -> Result<Data, SessionError> {
        var lastError = SessionError.noSession
        for candidate in candidates {
            let fingerprint = IdentityFingerprint(candidate).description
            var record = try session(user: envelope.sender.userID, device: envelope.sender.deviceID, fingerprint: fingerprint,
                                     in: batch.sessions)
            if batch.prekeys == nil {
                if let stored = try store.prekeys() {
                    batch.prekeys = stored
                } else {
                    batch.prekeys = try DevicePrekeys.generate()
                    batch.prekeysChanged = true
                }
            }
            guard var prekeys = batch.prekeys else { break }
            let before = prekeys.oneTimeCount
            do {
                let plaintext = try record.open(envelope, as: identity, recipientUserID: me, from: candidate, prekeys: &prekeys)
                batch.sessions.update(PeerSession(user: envelope.sender.userID, device: envelope.sender.deviceID, fingerprint: fingerprint,
                                                  record: record))
                if prekeys.oneTimeCount != before {
                    batch.prekeys = prekeys
                    batch.prekeysChanged = true
                }
                return .success(plaintext)
            } catch {
                lastError = error
            }
        }
        return .failure(lastError)
    }
}

/// Session state changed while opening one batch of mailbox entries; stored with its messages.
struct SessionBatch {
    var sessions: [PeerSession] = []
    var prekeys: DevicePrekeys?
    var prekeysChanged = false
    /// A low-water notice arrived: publish more one-time prekeys once the batch is stored.
    var replenish = false
}

extension [PeerSession] {
    /// Replaces the entry for the same device, or appends.
    mutating func update(_ session: PeerSession) {
        if let index = firstIndex(where: { $0.user == session.user && $0.device == session.device }) {
            self[index] = session
        } else {
            append(session)
        }
    }
}
