import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation
import Vapor

/// Prekeys for v2 sessions: a device publishes them, peers claim bundles (docs/PROTOCOL.md §9.3).
extension RelayAPI {
    /// Below this many one-time prekeys a device gets one `prekeysLow` notice.
    static let prekeyLowWater = 20
    /// The most one-time prekeys kept per device.
    static let prekeyCapacity = 500

    func prekeyStatus(_ input: Operations.PrekeyStatus.Input) async throws -> Operations.PrekeyStatus.Output {
        let (request, caller) = try await signedIn()
        return .ok(.init(body: .json(try await Self.prekeyStatus(of: caller.address, on: request.db))))
    }

    func uploadPrekeys(_ input: Operations.UploadPrekeys.Input) async throws -> Operations.UploadPrekeys.Output {
        let (request, caller) = try await signedIn()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let address = caller.address
        let now = Date()
        let status = try await context.write(request.db) { db in
            guard let device = try await DeviceRecord.query(on: db).filter(\.$userID == address.userID)
                .filter(\.$deviceID == address.deviceID).filter(\.$retiredAt == nil).first()
            else { throw APIFailure.notFound("This device") }
            let identity = try PublicIdentity(serialized: device.identity)
            let signed = try Self.verified(body.signedPrekey, kind: .x25519, field: "signedPrekey", for: identity)
            let kem = try Self.verified(body.kemPrekey, kind: .xwing, field: "kemPrekey", for: identity)
            let oneTime = try body.oneTimePrekeys.enumerated().map { index, key throws(APIFailure) in
                guard (1...Int64(UInt32.max)).contains(key.id), key.key.data.count == 32 else {
                    throw APIFailure(.invalidPrekey, "oneTimePrekeys[\(index)] needs an id from 1 to 2^32-1 and a 32-byte X25519 key.")
                }
                return PrekeyStore.Key(id: key.id, publicKey: Data(key.key.data), signature: nil)
            }
            try await PrekeyStore.store(signed: signed, kem: kem, oneTime: oneTime, for: address, capacity: Self.prekeyCapacity, now: now, on: db)
            return try await Self.prekeyStatus(of: address, on: db)
        }
        return .ok(.init(body: .json(status)))
    }

    func claimPrekeyBundles(_ input: Operations.ClaimPrekeyBundles.Input) async throws -> Operations.ClaimPrekeyBundles.Output {
        let (request, _) = try await signedIn()
        let userID = try Self.uuid(input.path.userId, "userId")
        let only = try input.query.deviceId.map { text throws(APIFailure) in try Self.uuid(text, "deviceId") }
        guard try await UserRecord.find(userID, on: request.db) != nil else { throw APIFailure.notFound("That user") }
        let context = self.context
        let now = Date()
        let bundles = try await context.write(request.db) { db, publication -> [Components.Schemas.PrekeyBundle] in
            var bundles: [Components.Schemas.PrekeyBundle] = []
            var query = DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$retiredAt == nil)
            if let only { query = query.filter(\.$deviceID == only) }
            let devices = try await query.sort(\.$registeredAt).all()
            for device in devices {
                let address = DeviceAddress(userID: userID, deviceID: device.deviceID)
                guard let signed = try await PrekeyStore.signed(of: address, on: db) else { continue }
                let oneTime = try await PrekeyStore.claimOneTime(from: address, postgres: context.usesPostgres, on: db)
                bundles.append(.init(
                    deviceId: device.deviceID.canonicalString, signedPrekey: Self.wire(signed.signed), kemPrekey: Self.wire(signed.kem),
                    oneTimePrekey: oneTime.map { .init(id: $0.id, key: .init($0.publicKey)) }))
                guard device.prekeysLowNoticedAt == nil else { continue }
                let remaining = try await PrekeyStore.oneTimeCount(of: address, on: db)
                guard remaining < Self.prekeyLowWater, try await PrekeyStore.markLowNoticed(try device.requireID(), at: now, on: db)
                else { continue }
                let status = Components.Schemas.PrekeyStatus(oneTimePrekeys: remaining, lowWater: Self.prekeyLowWater,
                                                             signedPrekeyId: signed.signed.id, kemPrekeyId: signed.kem.id)
                try await context.storeMailboxEntries([MailboxQueries.NewEntry(
                    recipient: address, kind: .prekeysLow, sender: address, messageID: nil,
                    payload: try StreamCoding.encoder().encode(status), receivedAt: now)], in: db, publishing: publication)
            }
            return bundles
        }
        return .ok(.init(body: .json(bundles)))
    }

    static func prekeyStatus(of address: DeviceAddress, on db: any Database) async throws -> Components.Schemas.PrekeyStatus {
        let signed = try await PrekeyStore.signed(of: address, on: db)
        return .init(oneTimePrekeys: try await PrekeyStore.oneTimeCount(of: address, on: db), lowWater: prekeyLowWater,
                     signedPrekeyId: signed?.signed.id, kemPrekeyId: signed?.kem.id)
    }

    /// The server checks what it can: a prekey signed by someone else than the device is refused
    /// here rather than by every peer that would fetch it.
    static func verified(_ key: Components.Schemas.SignedPrekey, kind: SignedPrekey.Kind, field: String,
                         for identity: PublicIdentity) throws(APIFailure) -> PrekeyStore.Key {
        guard let prekey = SignedPrekey(key, kind: kind) else {
            throw APIFailure(.invalidPrekey, "`\(field).id` must be from 1 to 2^32-1.")
        }
        do {
            try prekey.verify(for: identity)
        } catch {
            throw APIFailure(.invalidPrekey, "`\(field)`: \(error).")
        }
        return PrekeyStore.Key(id: key.id, publicKey: prekey.publicKey, signature: prekey.signature)
    }

    static func wire(_ key: PrekeyStore.Key) -> Components.Schemas.SignedPrekey {
        .init(id: key.id, key: .init(key.publicKey), signature: .init(key.signature ?? Data()))
    }
}
