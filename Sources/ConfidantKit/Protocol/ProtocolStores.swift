import ConfidantCrypto
import Foundation

// The state the session protocol needs, behind small store protocols as in libsignal: the
// protocol logic (`SessionCipher`) never touches a database or a socket. ConfidantKit implements
// them over its GRDB store inside one write transaction (`StoreTransaction`), so sessions, the
// messages they open and the mailbox cursor commit together; `InMemoryProtocolStore` serves tests.

/// Sessions (envelope v2) with peer devices, each bound to the peer identity it was started with.
public protocol SessionStore {
    /// The sessions with `device`, if they were started with the identity whose fingerprint is given.
    func session(with device: DeviceAddress, fingerprint: String) throws -> SessionRecord?
    /// Replaces the sessions with `device` (started with the identity `fingerprint`).
    func storeSession(_ record: SessionRecord, with device: DeviceAddress, fingerprint: String) throws
}

/// This device's own prekeys, private halves included.
public protocol PrekeyStore {
    func devicePrekeys() throws -> DevicePrekeys?
    func storeDevicePrekeys(_ prekeys: DevicePrekeys) throws
}

/// The device keys this profile knows: peers' and its own other devices'.
public protocol IdentityStore {
    /// The keys one device has had, current first, then retired ones newest first, each with
    /// when it was retired (by the relay's clock when known).
    func knownKeys(of device: DeviceAddress) throws -> [KnownKey]
}
