import ConfidantCrypto
import Foundation
import Synchronization

/// Device keys as read from the store, parsed once. Parsing a public identity checks its
/// Ed25519 signature, and a message sent or received reads the keys of its devices several times
/// (the identity store, the sender's known devices): four signature checks per message between
/// two profiles. The same bytes always parse to the same identity, so
/// answering from here changes nothing but the time.
final class ParsedIdentities: Sendable {
    /// Keys kept at most; past it the map starts again empty.
    static let maximumKeys = 4_096

    /// A parsed key and its fingerprint, which opening a message asks for every time.
    private struct Parsed {
        let identity: PublicIdentity
        let fingerprint: String
    }

    private let parsed = Mutex<[Data: Parsed]>([:])

    func identity(_ serialized: Data) throws -> PublicIdentity {
        try parse(serialized).identity
    }

    private func parse(_ serialized: Data) throws -> Parsed {
        if let known = parsed.withLock({ $0[serialized] }) { return known }
        let identity = try PublicIdentity(serialized: serialized)
        let entry = Parsed(identity: identity, fingerprint: IdentityFingerprint(identity).description)
        parsed.withLock { parsed in
            if parsed.count >= Self.maximumKeys { parsed.removeAll(keepingCapacity: true) }
            parsed[serialized] = entry
        }
        return entry
    }

    /// A stored device key with its identity parsed.
    func knownKey(_ record: ContactKeyRecord) throws -> KnownKey {
        try knownKey(identity: record.identity, firstSeen: record.firstSeen, retiredAt: record.retiredAt)
    }

    /// A device key from its stored columns (`contact_key`), its identity parsed.
    func knownKey(identity serialized: Data, firstSeen: Date, retiredAt: Date?) throws -> KnownKey {
        let entry = try parse(serialized)
        return KnownKey(
            identity: entry.identity, fingerprint: entry.fingerprint, firstSeen: firstSeen, retiredAt: retiredAt)
    }
}
