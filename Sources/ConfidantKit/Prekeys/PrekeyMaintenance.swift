import ConfidantAPI
import ConfidantCrypto
import Foundation

/// This device's prekeys on the server (docs/PROTOCOL.md §9.3): published at sign-in, the signed
/// ones rotated when due, one-time ones topped up when the server runs low. New prekeys are
/// stored before they are published, so a peer never starts a session this device cannot answer.
actor PrekeyMaintenance {
    private let relay: RelayClient
    private let store: LocalStore
    private let identity: PrivateIdentity
    /// Set once this instance has checked its prekeys on the server.
    private var maintained = false

    init(relay: RelayClient, store: LocalStore, identity: PrivateIdentity) {
        self.relay = relay
        self.store = store
        self.identity = identity
    }

    /// Publishes this device's prekeys: the stored ones, or new ones for a new device key (which
    /// also ends every session, since they were bound to the old key).
    func publish(newDeviceKey: Bool) async throws {
        let prekeys = try store.transaction { transaction -> DevicePrekeys in
            var prekeys: DevicePrekeys
            if !newDeviceKey, let stored = try transaction.devicePrekeys() {
                prekeys = stored
            } else {
                if newDeviceKey { try transaction.endAllSessions() }
                prekeys = try DevicePrekeys.generate()
            }
            if prekeys.needsRotation() { try prekeys.rotate() }
            try transaction.storeDevicePrekeys(prekeys)
            return prekeys
        }
        try await upload(prekeys, oneTime: prekeys.allOneTimePrekeys)
        maintained = true
    }

    /// Once per instance: rotates the signed prekeys when due and tops up one-time prekeys when
    /// the server runs low or lost them (e.g. a low-water notice arrived while this device was offline).
    func maintain() async throws {
        guard !maintained else { return }
        guard try store.prekeys() != nil else { return try await publish(newDeviceKey: false) }
        let status: Components.Schemas.PrekeyStatus
        switch try await relay.call({ try await $0.prekeyStatus() }) {
        case .ok(let ok): status = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        // Read, change and store in one transaction: a message opened meanwhile may use up a
        // one-time prekey, which must not come back from a stale copy.
        let changed = try store.transaction { transaction -> (DevicePrekeys, [OneTimePrekey])? in
            guard var prekeys = try transaction.devicePrekeys() else { return nil }
            let published = prekeys.currentIDs
            var fresh: [OneTimePrekey] = []
            var changed = false
            if prekeys.needsRotation() {
                try prekeys.rotate()
                changed = true
            }
            if status.signedPrekeyId != published.map({ Int64($0.signed) })
                || status.kemPrekeyId != published.map({ Int64($0.kem) })
            {
                // The server lost them (or never had them): publish everything this device holds.
                fresh = prekeys.allOneTimePrekeys
                changed = true
            }
            if status.oneTimePrekeys < status.lowWater {
                fresh += prekeys.addOneTimePrekeys(DevicePrekeys.batchSize)
                changed = true
            }
            guard changed else { return nil }
            try transaction.storeDevicePrekeys(prekeys)
            return (prekeys, fresh)
        }
        if let (prekeys, fresh) = changed { try await upload(prekeys, oneTime: fresh) }
        maintained = true
    }

    /// Answers a low-water notice: new one-time prekeys, stored before they are published.
    func replenish() async throws {
        let added = try store.transaction { transaction -> (DevicePrekeys, [OneTimePrekey])? in
            guard var prekeys = try transaction.devicePrekeys() else { return nil }
            let fresh = prekeys.addOneTimePrekeys(DevicePrekeys.batchSize)
            try transaction.storeDevicePrekeys(prekeys)
            return (prekeys, fresh)
        }
        guard let (prekeys, fresh) = added else { return try await publish(newDeviceKey: false) }
        try await upload(prekeys, oneTime: fresh)
    }

    private func upload(_ prekeys: DevicePrekeys, oneTime: [OneTimePrekey]) async throws {
        // The server takes at most 200 one-time prekeys per upload; send the newest.
        let body = Components.Schemas.PrekeyUpload(
            try prekeys.upload(signedBy: identity, oneTimePrekeys: Array(oneTime.suffix(200))))
        switch try await relay.call({ try await $0.uploadPrekeys(body: .json(body)) }) {
        case .ok: break
        case .default(let status, let response): throw problem(status, response)
        }
    }
}
