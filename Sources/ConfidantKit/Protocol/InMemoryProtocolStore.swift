import ConfidantCrypto
import Foundation
import Synchronization

/// The protocol stores in memory: for tests of the protocol logic without a database or relay,
/// and for tools that need no persistence.
public final class InMemoryProtocolStore: SessionStore, PrekeyStore, IdentityStore, Sendable {
    private struct State {
        var sessions: [DeviceAddress: (fingerprint: String, record: SessionRecord)] = [:]
        var prekeys: DevicePrekeys?
        var keys: [DeviceAddress: [KnownKey]] = [:]
    }

    private let state = Mutex(State())

    /// Empty stores; this device's prekeys when given.
    public init(prekeys: DevicePrekeys? = nil) {
        state.withLock { $0.prekeys = prekeys }
    }

    /// The sessions with `device`, if started with the identity `fingerprint`.
    public func session(with device: DeviceAddress, fingerprint: String) -> SessionRecord? {
        state.withLock { state in state.sessions[device].flatMap { $0.fingerprint == fingerprint ? $0.record : nil } }
    }

    /// Replaces the sessions with `device`.
    public func storeSession(_ record: SessionRecord, with device: DeviceAddress, fingerprint: String) {
        state.withLock { $0.sessions[device] = (fingerprint, record) }
    }

    /// This device's prekeys.
    public func devicePrekeys() -> DevicePrekeys? { state.withLock { $0.prekeys } }

    /// Replaces this device's prekeys.
    public func storeDevicePrekeys(_ prekeys: DevicePrekeys) { state.withLock { $0.prekeys = prekeys } }

    /// The keys `device` has had, current first.
    public func knownKeys(of device: DeviceAddress) -> [KnownKey] { state.withLock { $0.keys[device] ?? [] } }

    /// Records `identity` as the device's current key at `date`; the previous one is retired then.
    public func learn(_ identity: PublicIdentity, of user: UUID, at date: Date = Date()) {
        let device = DeviceAddress(userID: user, deviceID: identity.deviceID)
        state.withLock { state in
            let others = (state.keys[device] ?? []).filter { $0.identity != identity }.map {
                KnownKey(
                    identity: $0.identity, fingerprint: $0.fingerprint, firstSeen: $0.firstSeen,
                    retiredAt: $0.retiredAt ?? date)
            }
            state.keys[device] = [KnownKey(identity: identity, firstSeen: date, retiredAt: nil)] + others
        }
    }

    /// Retires the device's current key at `date` (the device was removed).
    public func retire(_ device: DeviceAddress, at date: Date) {
        state.withLock { state in
            state.keys[device] = state.keys[device]?.map {
                KnownKey(
                    identity: $0.identity, fingerprint: $0.fingerprint, firstSeen: $0.firstSeen,
                    retiredAt: $0.retiredAt ?? date)
            }
        }
    }
}
