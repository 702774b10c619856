import ConfidantAPI
import ConfidantCrypto
import Foundation

/// The directory, contacts, devices and verification.
extension Messenger {
    /// Users on the server except this one, ordered by e-mail; `search` is a prefix of the e-mail, the name or a word of the name ("dyl" finds Bob Dylan).
    public func users(search: String? = nil, limit: Int = 1000) async throws -> [Contact] {
        try await directory.users(search: search, limit: limit)
    }

    /// A user by e-mail: from the contacts this profile knows, else from the server's directory.
    public func contact(email: String) async throws -> Contact { try await directory.contact(email: email) }

    /// A contact this profile has stored, by id.
    public func knownContact(_ id: UUID) throws -> Contact? { try store.contact(id: id) }

    /// The user's keys as this profile knows them, retired ones too.
    public func knownKeys(of user: UUID) throws -> [KnownKey] { try store.keys(of: user, includingRetired: true) }

    /// This account's devices as the server lists them.
    public func devices() async throws -> [PublicIdentity] { try await directory.refreshKeys(of: me) }

    /// This account's current devices with their names and last activity, this one first.
    public func ownDevices() async throws -> [OwnDevice] {
        let listed: [Components.Schemas.OwnDevice]
        switch try await relay.call({ try await $0.listOwnDevices() }) {
        case .ok(let ok): listed = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        let me = identity.deviceID
        return try listed.map { device in
            guard let id = UUID(uuidString: device.deviceId) else {
                throw ConfidantKitError.badResponse("the device id \(device.deviceId) is not a UUID")
            }
            return OwnDevice(
                id: id, name: device.name, registeredAt: device.registeredAt, lastSeenAt: device.lastSeenAt,
                isThisDevice: id == me)
        }.sorted { $0.isThisDevice && !$1.isThisDevice }
    }

    /// Names one of this account's devices (this one too); the relay trims it and takes 1 to
    /// ``OwnDevice/maximumNameLength`` characters without control characters.
    public func renameDevice(_ deviceID: UUID, to name: String) async throws {
        let body = Components.Schemas.DeviceName(name: name)
        switch try await relay.call({
            try await $0.renameDevice(path: .init(deviceId: deviceID.canonicalString), body: .json(body))
        }) {
        case .noContent: break
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// Signs one of this account's other devices out for good (a lost or sold phone): its
    /// sessions end, its open stream closes, its mailbox is emptied, and peers are told its key
    /// is retired. To sign this device out, use `logout`.
    public func removeDevice(_ deviceID: UUID) async throws {
        guard deviceID != identity.deviceID else { throw ConfidantKitError.cannotRemoveThisDevice }
        switch try await relay.call({ try await $0.removeDevice(path: .init(deviceId: deviceID.canonicalString)) }) {
        case .noContent: break
        case .default(let status, let response): throw problem(status, response)
        }
        _ = try await directory.refreshKeys(of: me)
    }

    /// The safety numbers with the peer's devices, and whether they are the keys you verified.
    public func verification(of contact: Contact) async throws -> PeerVerification {
        try await directory.verification(of: contact)
    }

    /// Marks the peer's current keys (as last fetched) as verified.
    public func markVerified(_ contact: Contact) throws { try directory.markVerified(contact) }

    /// Forgets that the peer's keys were verified: sending no longer stops when they change.
    public func unmarkVerified(_ contact: Contact) throws { try directory.acceptChangedKeys(of: contact.id) }

    /// Whether the peer's keys as this device knows them are the ones verified, without asking
    /// the server (for a badge; ``verification(of:)`` fetches the current keys first).
    public func verificationState(of peer: UUID) throws -> PeerVerification.State {
        try directory.localState(of: peer)
    }
}
