import Foundation

/// A user's device: where a mailbox entry goes.
public struct DeviceAddress: Hashable, Sendable, CustomStringConvertible {
    public let userID: UUID
    public let deviceID: UUID

    public init(userID: UUID, deviceID: UUID) {
        self.userID = userID
        self.deviceID = deviceID
    }

    public var description: String { "\(userID.uuidString.lowercased()):\(deviceID.uuidString.lowercased())" }

    init?(parsing text: Substring) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let user = UUID(uuidString: String(parts[0])), let device = UUID(uuidString: String(parts[1])) else { return nil }
        self.init(userID: user, deviceID: device)
    }
}
