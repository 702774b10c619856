import ConfidantCrypto
import Crypto
import Foundation

/// A change in a user's device keys, as the server announced it or as a key refresh found it.
public struct KeyChange: Sendable, Hashable {
    /// What happened to the device's key.
    public enum Kind: String, Sendable { case added, replaced, removed }
    /// The user whose device changed.
    public let user: UUID
    /// The device.
    public let deviceID: UUID
    /// Added, replaced or removed.
    public let kind: Kind
    /// The fingerprint of the new key (of the retired one for a removal).
    public let fingerprint: String

    /// A change as found.
    public init(user: UUID, deviceID: UUID, kind: Kind, fingerprint: String) {
        self.user = user
        self.deviceID = deviceID
        self.kind = kind
        self.fingerprint = fingerprint
    }

    /// One id per change, so the server's notice and a refresh that finds the same change
    /// store one line.
    var noticeID: UUID {
        let digest = Array(SHA256.hash(data: Data("\(user)|\(deviceID)|\(kind.rawValue)|\(fingerprint)".utf8)))
        var bytes = Array(digest[0..<16])
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// What the user is told when one of their own other devices changed.
    var accountNoticeText: String {
        let device = String(deviceID.canonicalString.prefix(8))
        return switch kind {
        case .added:
            "A new device (\(device)) signed in to your account. If it was not you, remove it and change your password."
        case .replaced:
            "Your device \(device) signed in with a new key. If it was not you, remove it and change your password."
        case .removed: "Your device \(device) was signed out; its key was retired."
        }
    }

    /// The seed's "tunnel concept" warning, as the notice shows it.
    func noticeText(name: String) -> String {
        switch kind {
        case .added, .replaced: "\(name)'s security key changed — messages sent to the old device can't be read there"
        case .removed: "\(name) signed out a device; its key was retired"
        }
    }
}
