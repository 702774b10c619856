import Foundation

/// A user's device: who an envelope is from or to, and whose mailbox an entry is in.
///
/// The one name for "a user's device" across Confidant: envelope headers carry two of them, the
/// relay files mailbox entries under one, and the client keeps sessions per peer `DeviceAddress`.
public struct DeviceAddress: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The user the device belongs to.
    public let userID: UUID
    /// The device, as its identity names it (`PublicIdentity.deviceID`).
    public let deviceID: UUID

    /// The device `deviceID` of the user `userID`.
    public init(userID: UUID, deviceID: UUID) {
        self.userID = userID
        self.deviceID = deviceID
    }

    /// `user:device`, both in their canonical (lowercase) form.
    public var description: String { "\(userID.canonicalString):\(deviceID.canonicalString)" }

    /// Parses the `user:device` form of ``description``; nil for anything else.
    public init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let user = UUID(hyphenatedHex: parts[0]),
            let device = UUID(hyphenatedHex: parts[1])
        else {
            return nil
        }
        self.init(userID: user, deviceID: device)
    }
}
