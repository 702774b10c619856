import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// Who a group of messages may go to: which of their users exist, and those users' current devices.
struct RecipientDirectory: Sendable {
    let users: Set<UUID>
    let devices: [UUID: Set<DeviceAddress>]

    static func load(_ users: [UUID], on db: any Database) async throws -> RecipientDirectory {
        typealias Device = DeviceRecord.Column
        let sql = try RelayDatabase.sql(db)
        let known = Set(
            try await sql.select().column("id").from(UserRecord.schema).where("id", .in, users).all()
                .map { try $0.decode(column: "id", as: UUID.self) })
        var devices: [UUID: Set<DeviceAddress>] = [:]
        for row in try await sql.select().columns(Device.userID, Device.deviceID).from(DeviceRecord.schema)
            .where(Device.userID, .in, users).where(Device.retiredAt, .is, SQLLiteral.null).all()
        {
            let address = DeviceAddress(
                userID: try row.decode(column: Device.userID, as: UUID.self),
                deviceID: try row.decode(column: Device.deviceID, as: UUID.self))
            devices[address.userID, default: []].insert(address)
        }
        return RecipientDirectory(users: known, devices: devices)
    }

    /// A message must reach every current device of each recipient and every other current
    /// device of the sender, and no retired one, so that no device silently misses it.
    func check(_ recipients: [DeviceAddress], sender: DeviceAddress) throws(APIFailure) {
        let involved = Set(recipients.map(\.userID)).union([sender.userID])
        if let missing = involved.subtracting(users).first {
            throw APIFailure(.unknownUser, "User \(missing.canonicalString) does not exist (any more).")
        }
        let expected = involved.reduce(into: Set<DeviceAddress>()) { $0.formUnion(devices[$1] ?? []) }.subtracting([
            sender
        ])
        let given = Set(recipients)
        guard given == expected else {
            let missing = expected.subtracting(given).map(\.description).sorted()
            let stale = given.subtracting(expected).map(\.description).sorted()
            throw APIFailure(
                .deviceMismatch,
                """
                Devices changed: reload the recipients' keys and seal again. Missing: \(missing.isEmpty ? "none" : missing.joined(separator: ", ")); \
                no longer current: \(stale.isEmpty ? "none" : stale.joined(separator: ", ")).
                """)
        }
    }
}
