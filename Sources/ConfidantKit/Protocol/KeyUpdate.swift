import ConfidantCrypto
import Foundation

/// What to record when the server lists a user's current device keys, given the keys this
/// profile knew: which keys retire, which are new, which sessions end (a session belongs to the
/// key it was started with — the seed's tunnel concept), and the changes to tell the user about.
struct KeyUpdate: Equatable {
    /// A key this profile holds as current.
    struct Known: Equatable {
        let deviceID: UUID
        let fingerprint: String
    }

    var retire: [Known] = []
    var add: [PublicIdentity] = []
    /// Devices whose sessions end: their key changed or they were removed.
    var endSessions: [UUID] = []
    /// Nothing the first time this profile sees the user.
    var changes: [KeyChange] = []

    /// - Parameters:
    ///   - known: the keys held as current.
    ///   - seenBefore: whether this profile ever recorded a key of the user (retired ones count).
    ///   - current: the user's devices as the server lists them now.
    init(user: UUID, known: [Known], seenBefore: Bool, current: [PublicIdentity]) {
        let currentFingerprints = Set(current.map { IdentityFingerprint($0).description })
        let currentDevices = Set(current.map(\.deviceID))
        var knownDevices: [UUID: String] = [:]
        for key in known {
            knownDevices[key.deviceID] = key.fingerprint
            guard !currentFingerprints.contains(key.fingerprint) else { continue }
            retire.append(key)
            endSessions.append(key.deviceID)
            if !currentDevices.contains(key.deviceID) {
                changes.append(
                    KeyChange(user: user, deviceID: key.deviceID, kind: .removed, fingerprint: key.fingerprint))
            }
        }
        for identity in current {
            let fingerprint = IdentityFingerprint(identity).description
            guard knownDevices[identity.deviceID] != fingerprint else { continue }
            add.append(identity)
            if seenBefore {
                changes.append(
                    KeyChange(
                        user: user, deviceID: identity.deviceID,
                        kind: knownDevices[identity.deviceID] == nil ? .added : .replaced, fingerprint: fingerprint))
            }
        }
    }
}
