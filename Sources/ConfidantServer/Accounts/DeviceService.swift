import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation

/// Users' devices and their keys: registering a new or replaced key, removing a device, key
/// history, and the key-change notices their peers and own other devices get.
struct DeviceService: Sendable {
    let mailbox: MailboxService
    let revoker: SessionRevoker
    let now: @Sendable () -> Date

    private var db: any Database { mailbox.publisher.database.db }

    /// Within a mailbox write: records `identity` as the user's device, retiring the key it
    /// replaces, and announces the change. Nil when the device already has this key.
    func register(
        _ identity: PublicIdentity, of userID: UUID, at now: Date, in db: any Database,
        publishing publication: MailboxPublication
    ) async throws -> Components.Schemas.KeyChange.ChangePayload? {
        let deviceID = identity.deviceID
        let bytes = identity.serialized
        let current = try await DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$deviceID == deviceID)
            .filter(\.$retiredAt == nil).first()
        let change: Components.Schemas.KeyChange.ChangePayload
        let record = DeviceRecord(userID: userID, deviceID: deviceID, identity: bytes, registeredAt: now)
        record.lastSeenAt = now
        if let current {
            current.lastSeenAt = now
            guard current.identity != bytes else {
                try await current.update(on: db)
                return nil
            }
            current.retiredAt = now
            try await current.update(on: db)
            record.name = current.name
            change = .replaced
        } else {
            change = .added
        }
        try await record.create(on: db)
        try await announce(
            change, of: DeviceAddress(userID: userID, deviceID: deviceID), identity: bytes, at: now, in: db,
            publishing: publication)
        return change
    }

    /// Retires one of the caller's devices: its sessions end, its mailbox is emptied, peers are told.
    func remove(_ deviceID: UUID, of caller: Caller) async throws {
        try await remove(deviceID, ofUser: caller.userID)
    }

    /// Retires the device `deviceID` of `userID` (the operator's `admin account revoke-device`
    /// too); `alsoIn` runs in the same transaction.
    func remove(
        _ deviceID: UUID, ofUser userID: UUID,
        alsoIn extra: @escaping @Sendable (any Database) async throws -> Void = { _ in }
    ) async throws {
        let now = now()
        try await mailbox.write { [self] db, publication in
            guard
                let device = try await DeviceRecord.query(on: db).filter(\.$userID == userID).filter(
                    \.$deviceID == deviceID
                )
                .filter(\.$retiredAt == nil).first()
            else { throw APIFailure.notFound("That device") }
            device.retiredAt = now
            try await extra(db)
            try await device.update(on: db)
            try await SessionRecord.query(on: db).filter(\.$userID == userID).filter(\.$deviceID == deviceID)
                .filter(\.$revokedAt == nil).set(\.$revokedAt, to: now).update()
            try await MailboxTable.deleteAll(of: userID, device: deviceID, on: db)
            try await announce(
                .removed, of: DeviceAddress(userID: userID, deviceID: deviceID), identity: nil, at: now, in: db,
                publishing: publication)
        }
        await revoker.revoked(.device(DeviceAddress(userID: userID, deviceID: deviceID)))
    }

    /// The user's current devices, oldest first.
    func current(of userID: UUID) async throws -> [DeviceRecord] {
        try await DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$retiredAt == nil).sort(
            \.$registeredAt
        ).all()
    }

    /// Names one of the caller's current devices (`name` as `Self.deviceName` accepts it).
    func rename(_ deviceID: UUID, of caller: Caller, to name: String) async throws {
        let userID = caller.userID
        let renamed = try await mailbox.publisher.database.write { db -> Bool in
            guard
                let device = try await DeviceRecord.query(on: db).filter(\.$userID == userID)
                    .filter(\.$deviceID == deviceID).filter(\.$retiredAt == nil).first()
            else { return false }
            device.name = name
            try await device.update(on: db)
            return true
        }
        guard renamed else { throw APIFailure.notFound("That device") }
    }

    /// A device name as the document bounds it (at most 40 code points, no control character,
    /// not only white space), trimmed of white space.
    static func deviceName(_ raw: String) throws(APIFailure) -> String {
        let name = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard raw.unicodeScalars.count <= 40, !name.isEmpty,
            !raw.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw APIFailure(.invalidDeviceName, "A device name needs 1 to 40 characters, without control characters.")
        }
        return name
    }

    /// The device's current identity, or nil when it has none (removed, or never signed in).
    func identity(of address: DeviceAddress) async throws -> PublicIdentity? {
        guard
            let record = try await DeviceRecord.query(on: db).filter(\.$userID == address.userID)
                .filter(\.$deviceID == address.deviceID).filter(\.$retiredAt == nil).first()
        else { return nil }
        return try PublicIdentity(serialized: record.identity)
    }

    /// Every key the user's devices ever had, oldest first.
    func history(of userID: UUID) async throws -> [DeviceRecord] {
        try await DeviceRecord.query(on: db).filter(\.$userID == userID).sort(\.$registeredAt).all()
    }

    /// Key-change notices for every current device of users who have a conversation with the
    /// device's user, and for the user's own other current devices. Also drops the device's
    /// prekeys: they were signed by the key that changed.
    func announce(
        _ change: Components.Schemas.KeyChange.ChangePayload, of device: DeviceAddress, identity: Data?, at now: Date,
        in db: any Database, publishing publication: MailboxPublication
    ) async throws {
        try await PrekeyTable.discard(device, on: db)
        let peers = try await ConversationRecord.query(on: db).filter(\.$peerID == device.userID).all().map(\.ownerID)
        let audience = Set(peers + [device.userID])
        let devices = try await DeviceRecord.query(on: db).filter(\.$userID ~~ Array(audience)).filter(
            \.$retiredAt == nil
        ).all()
        let notice = Components.Schemas.KeyChange(
            userId: device.userID.canonicalString, deviceId: device.deviceID.canonicalString,
            change: change, identity: identity.map { .init($0) })
        let payload = try StreamCoding.encoder().encode(notice)
        let recipients = devices.map { DeviceAddress(userID: $0.userID, deviceID: $0.deviceID) }.filter { $0 != device }
        try await mailbox.store(
            recipients.map {
                NewMailboxEntry(
                    recipient: $0, kind: .keyChange, sender: device, messageID: nil, payload: payload, receivedAt: now)
            }, in: db, publishing: publication)
    }
}

extension DeviceRecord {
    /// As the account itself sees it: with name and last activity.
    var ownWire: Components.Schemas.OwnDevice {
        .init(deviceId: deviceID.canonicalString, name: name, registeredAt: registeredAt, lastSeenAt: lastSeenAt)
    }

    var wire: Components.Schemas.DeviceKey {
        .init(
            deviceId: deviceID.canonicalString, identity: .init(identity), registeredAt: registeredAt,
            retiredAt: retiredAt)
    }
}

extension UserRecord {
    var wire: Components.Schemas.User {
        get throws {
            .init(
                id: try requireID().canonicalString, email: email, displayName: displayName,
                hasAvatar: avatarDigest != nil || avatar != nil, avatarDigest: avatarDigest)
        }
    }
}
