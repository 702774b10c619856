import ConfidantCrypto
import Foundation

/// Sessions that just ended: one session (sign-out), every session of a device (device removal)
/// or of an account (account deletion). Caches forget them and open streams of them close, on
/// this instance at once and on the others through the database's notifications.
enum Revocation: Sendable, Equatable {
    case session(UUID)
    case device(DeviceAddress)
    case account(UUID)

    /// Whether `caller`'s session is one of those that ended.
    func covers(_ caller: Caller) -> Bool {
        switch self {
        case .session(let id): caller.sessionID == id
        case .device(let address): caller.address == address
        case .account(let userID): caller.userID == userID
        }
    }

    /// The text other instances receive (a NOTIFY payload), e.g. `revoke session <uuid>`.
    var notification: String {
        switch self {
        case .session(let id): "\(Self.prefix)session \(id.canonicalString)"
        case .device(let address): "\(Self.prefix)device \(address)"
        case .account(let userID): "\(Self.prefix)account \(userID.canonicalString)"
        }
    }

    static let prefix = "revoke "

    /// Parses `notification`; nil for anything else (such as a list of mailbox addresses).
    init?(notification text: String) {
        guard text.hasPrefix(Self.prefix) else { return nil }
        let parts = text.dropFirst(Self.prefix.count).split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let value = String(parts[1])
        switch parts[0] {
        case "session":
            guard let id = UUID(uuidString: value) else { return nil }
            self = .session(id)
        case "device":
            guard let address = DeviceAddress(parsing: value) else { return nil }
            self = .device(address)
        case "account":
            guard let id = UUID(uuidString: value) else { return nil }
            self = .account(id)
        default: return nil
        }
    }
}
