import ConfidantCrypto
import Foundation
import GRDB

/// Sender keys (docs/PROTOCOL.md §10.4), sealed at rest: this device's sending chain per group
/// with the devices it went to, and the chains other member devices gave this one.
extension LocalStore {
    /// The most chains kept per member device and group: a new one replaces an older one only
    /// after messages of the older one have had time to arrive.
    static let chainsPerDevice = 4
    /// The most chains kept from one user, over all of their devices and groups.
    static let chainsPerUser = 4_096

    /// This device's sending chain for the group, if it has one.
    func sendingChain(for group: UUID, _ db: Database) throws -> SenderKeySendingChain? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT chain_id, sealed FROM sender_chain WHERE group_id = ?",
                arguments: [group.canonicalString])
        else { return nil }
        guard let chainID = UUID(uuidString: row["chain_id"]) else {
            throw ConfidantKitError.storeDamaged("a stored sending chain has no id")
        }
        let bytes = try open(row["sealed"], .sendingChain(group: group, chain: chainID))
        do {
            return try SenderKeySendingChain(serialized: bytes)
        } catch {
            throw ConfidantKitError.storeDamaged("a stored sending chain does not decode (\(error))")
        }
    }

    /// Stores the group's sending chain; a new chain forgets the devices the old one went to.
    func saveSendingChain(_ chain: SenderKeySendingChain, _ db: Database) throws {
        let group = chain.groupID.canonicalString
        let chainID = chain.chainID.canonicalString
        try db.execute(
            sql: "DELETE FROM sender_chain_share WHERE group_id = ? AND chain_id != ?", arguments: [group, chainID])
        try db.execute(
            sql: """
                INSERT INTO sender_chain (group_id, chain_id, sealed) VALUES (?, ?, ?)
                ON CONFLICT (group_id) DO UPDATE SET chain_id = excluded.chain_id, sealed = excluded.sealed
                """,
            arguments: [
                group, chainID, try seal(chain.serialized, .sendingChain(group: chain.groupID, chain: chain.chainID)),
            ])
    }

    /// Forgets the group's sending chain (this device left, or the group is gone).
    func dropSendingChain(for group: UUID, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM sender_chain WHERE group_id = ?", arguments: [group.canonicalString])
        try db.execute(sql: "DELETE FROM sender_chain_share WHERE group_id = ?", arguments: [group.canonicalString])
    }

    /// The devices the group's current chain was given to.
    func chainShares(of chain: SenderKeySendingChain, _ db: Database) throws -> Set<DeviceAddress> {
        let rows = try Row.fetchAll(
            db, sql: "SELECT user_id, device_id FROM sender_chain_share WHERE group_id = ? AND chain_id = ?",
            arguments: [chain.groupID.canonicalString, chain.chainID.canonicalString])
        return Set(
            rows.compactMap { row in
                guard let user = UUID(uuidString: row["user_id"]), let device = UUID(uuidString: row["device_id"])
                else { return nil }
                return DeviceAddress(userID: user, deviceID: device)
            })
    }

    /// Records that the chain went to `devices` (stored on the relay before any message of it).
    func recordShares(of chain: SenderKeySendingChain, with devices: [DeviceAddress]) throws {
        try write { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO sender_chain_share (group_id, chain_id, user_id, device_id) VALUES (?, ?, ?, ?)
                    ON CONFLICT (group_id, user_id, device_id) DO UPDATE SET chain_id = excluded.chain_id
                    """)
            for device in devices {
                try insert.execute(arguments: [
                    chain.groupID.canonicalString, chain.chainID.canonicalString, device.userID.canonicalString,
                    device.deviceID.canonicalString,
                ])
            }
        }
    }

    /// Keeps a chain another member device gave this one. One already held stays as it is (it
    /// may have moved past the distribution's position); beyond `chainsPerDevice` for that device
    /// and group, the oldest go.
    func receiveSenderKey(_ distribution: SenderKeyDistribution, from owner: DeviceAddress, now: Date, _ db: Database)
        throws
    {
        let chainID = distribution.chainID.canonicalString
        guard
            try Bool.fetchOne(db, sql: "SELECT 1 FROM receiving_chain WHERE chain_id = ?", arguments: [chainID])
                != true
        else { return }
        let chain = SenderKeyReceivingChain(distribution)
        let (group, user, device) = (
            distribution.groupID.canonicalString, owner.userID.canonicalString, owner.deviceID.canonicalString
        )
        try db.execute(
            sql: """
                INSERT INTO receiving_chain (chain_id, group_id, user_id, device_id, sealed, received_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                chainID, group, user, device, try sealReceivingChain(chain, owner: owner), now.timeIntervalSince1970,
            ])
        try db.execute(
            sql: """
                DELETE FROM receiving_chain WHERE chain_id IN (
                  SELECT chain_id FROM receiving_chain WHERE group_id = ? AND user_id = ? AND device_id = ?
                  ORDER BY received_at DESC, rowid DESC LIMIT -1 OFFSET ?)
                """,
            arguments: [group, user, device, Self.chainsPerDevice])
        // Bounded per user too: anyone can send a distribution for any group id.
        try db.execute(
            sql: """
                DELETE FROM receiving_chain WHERE chain_id IN (
                  SELECT chain_id FROM receiving_chain WHERE user_id = ?
                  ORDER BY received_at DESC, rowid DESC LIMIT -1 OFFSET ?)
                """,
            arguments: [user, Self.chainsPerUser])
    }

    /// A chain given to this device, and whose it is.
    func receivingChain(_ chainID: UUID, _ db: Database) throws -> (
        chain: SenderKeyReceivingChain, owner: DeviceAddress
    )? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT group_id, user_id, device_id, sealed FROM receiving_chain WHERE chain_id = ?",
                arguments: [chainID.canonicalString])
        else { return nil }
        guard let group = UUID(uuidString: row["group_id"]), let user = UUID(uuidString: row["user_id"]),
            let device = UUID(uuidString: row["device_id"])
        else { throw ConfidantKitError.storeDamaged("a stored receiving chain names no owner") }
        let owner = DeviceAddress(userID: user, deviceID: device)
        let bytes = try open(row["sealed"], .receivingChain(chain: chainID, group: group, owner: owner))
        do {
            let chain = try SenderKeyReceivingChain(serialized: bytes)
            guard chain.groupID == group, chain.chainID == chainID else {
                throw ConfidantKitError.storeDamaged("a stored receiving chain is filed under another id")
            }
            return (chain, owner)
        } catch let error as ConfidantKitError {
            throw error
        } catch {
            throw ConfidantKitError.storeDamaged("a stored receiving chain does not decode (\(error))")
        }
    }

    /// Stores a receiving chain that moved on (a message opened).
    func saveReceivingChain(_ chain: SenderKeyReceivingChain, owner: DeviceAddress, _ db: Database) throws {
        try db.execute(
            sql: "UPDATE receiving_chain SET sealed = ? WHERE chain_id = ?",
            arguments: [try sealReceivingChain(chain, owner: owner), chain.chainID.canonicalString])
    }

    private func sealReceivingChain(_ chain: SenderKeyReceivingChain, owner: DeviceAddress) throws -> Data {
        try seal(chain.serialized, .receivingChain(chain: chain.chainID, group: chain.groupID, owner: owner))
    }
}
