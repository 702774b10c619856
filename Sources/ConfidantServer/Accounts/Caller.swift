import ConfidantCrypto
import Foundation

/// The signed-in caller of a request: whose session, on which device.
struct Caller: Sendable {
    let userID: UUID
    let deviceID: UUID
    let sessionID: UUID

    var address: DeviceAddress { DeviceAddress(userID: userID, deviceID: deviceID) }
}
