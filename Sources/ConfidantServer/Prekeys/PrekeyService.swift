import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation

/// Prekeys for v2 sessions: a device publishes them, peers claim bundles, and a device running
/// low is told once (docs/PROTOCOL.md §9.3).
struct PrekeyService: Sendable {
    /// Below this many one-time prekeys a device gets one `prekeysLow` notice.
    static let lowWater = 20
    /// The most one-time prekeys kept per device.
    static let capacity = 500

    let mailbox: MailboxService
    let claims: RateLimitSetting
    let now: @Sendable () -> Date

    private var database: RelayDatabase { mailbox.publisher.database }

    func status(of address: DeviceAddress) async throws -> Components.Schemas.PrekeyStatus {
        try await Self.status(of: address, on: database.db)
    }

    private static func status(of address: DeviceAddress, on db: any Database) async throws
        -> Components.Schemas.PrekeyStatus
    {
        let signed = try await PrekeyTable.signed(of: address, on: db)
        return .init(
            oneTimePrekeys: try await PrekeyTable.oneTimeCount(of: address, on: db), lowWater: lowWater,
            signedPrekeyId: signed?.signed.id, kemPrekeyId: signed?.kem.id)
    }

    /// Publishes the device's prekeys after checking their signatures against its identity.
    func upload(_ body: Components.Schemas.PrekeyUpload, for address: DeviceAddress) async throws
        -> Components.Schemas.PrekeyStatus
    {
        let now = now()
        return try await database.write { db in
            guard
                let device = try await DeviceRecord.query(on: db).filter(\.$userID == address.userID)
                    .filter(\.$deviceID == address.deviceID).filter(\.$retiredAt == nil).first()
            else { throw APIFailure.notFound("This device") }
            let identity = try PublicIdentity(serialized: device.identity)
            let signed = try Self.verified(body.signedPrekey, kind: .x25519, field: "signedPrekey", for: identity)
            let kem = try Self.verified(body.kemPrekey, kind: .xwing, field: "kemPrekey", for: identity)
            let oneTime = try body.oneTimePrekeys.enumerated().map { index, key throws(APIFailure) in
                guard (1...Int64(UInt32.max)).contains(key.id), key.key.data.count == 32 else {
                    throw APIFailure(
                        .invalidPrekey,
                        "oneTimePrekeys[\(index)] needs an id from 1 to 2^32-1 and a 32-byte X25519 key.")
                }
                return PrekeyTable.Key(id: key.id, publicKey: Data(key.key.data), signature: nil)
            }
            try await PrekeyTable.store(
                signed: signed, kem: kem, oneTime: oneTime, for: address, capacity: Self.capacity, now: now, on: db)
            return try await Self.status(of: address, on: db)
        }
    }

    /// One bundle per current device of the user (or only `device`) that published prekeys, each
    /// with one one-time prekey while any remain. A device that runs low gets one notice.
    func claimBundles(of userID: UUID, device only: UUID?, by requester: UUID) async throws -> [Components.Schemas
        .PrekeyBundle]
    {
        guard try await UserRecord.find(userID, on: database.db) != nil else { throw APIFailure.notFound("That user") }
        try await claims.take(
            ["prekey-claims/\(requester.canonicalString)"], on: database, now: now(), what: "prekey bundle claims")
        let now = now()
        let mailbox = mailbox
        let postgres = database.isPostgres
        return try await mailbox.write { db, publication in
            var bundles: [Components.Schemas.PrekeyBundle] = []
            var query = DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$retiredAt == nil)
            if let only { query = query.filter(\.$deviceID == only) }
            for device in try await query.sort(\.$registeredAt).all() {
                let address = DeviceAddress(userID: userID, deviceID: device.deviceID)
                guard let signed = try await PrekeyTable.signed(of: address, on: db) else { continue }
                let oneTime = try await PrekeyTable.claimOneTime(from: address, postgres: postgres, on: db)
                bundles.append(
                    .init(
                        deviceId: device.deviceID.canonicalString, signedPrekey: Self.wire(signed.signed),
                        kemPrekey: Self.wire(signed.kem),
                        oneTimePrekey: oneTime.map { .init(id: $0.id, key: .init($0.publicKey)) }))
                guard device.prekeysLowNoticedAt == nil else { continue }
                let remaining = try await PrekeyTable.oneTimeCount(of: address, on: db)
                guard remaining < Self.lowWater,
                    try await PrekeyTable.markLowNoticed(try device.requireID(), at: now, on: db)
                else { continue }
                let status = Components.Schemas.PrekeyStatus(
                    oneTimePrekeys: remaining, lowWater: Self.lowWater,
                    signedPrekeyId: signed.signed.id, kemPrekeyId: signed.kem.id)
                try await mailbox.store(
                    [
                        NewMailboxEntry(
                            recipient: address, kind: .prekeysLow, sender: address, messageID: nil,
                            payload: try StreamCoding.encoder().encode(status), receivedAt: now)
                    ],
                    in: db, publishing: publication)
            }
            return bundles
        }
    }

    /// The server checks what it can: a prekey signed by someone else than the device is refused
    /// here rather than by every peer that would fetch it.
    private static func verified(
        _ key: Components.Schemas.SignedPrekey, kind: SignedPrekey.Kind, field: String,
        for identity: PublicIdentity
    ) throws(APIFailure) -> PrekeyTable.Key {
        guard let prekey = SignedPrekey(key, kind: kind) else {
            throw APIFailure(.invalidPrekey, "`\(field).id` must be from 1 to 2^32-1.")
        }
        do {
            try prekey.verify(for: identity)
        } catch {
            throw APIFailure(.invalidPrekey, "`\(field)`: \(error).")
        }
        return PrekeyTable.Key(id: key.id, publicKey: prekey.publicKey, signature: prekey.signature)
    }

    private static func wire(_ key: PrekeyTable.Key) -> Components.Schemas.SignedPrekey {
        .init(id: key.id, key: .init(key.publicKey), signature: .init(key.signature ?? Data()))
    }
}
