import ConfidantCrypto
import ConfidantAPI
import Fluent
import Foundation
import OpenAPIRuntime
import SQLKit
import Vapor

/// The HTTP API: implements the operations that swift-openapi-generator generated from
/// ConfidantAPI's `openapi.yaml`. One file per area (accounts, directory, messages, blobs).
struct RelayAPI: APIProtocol {
    let context: RelayContext

    func health(_ input: Operations.Health.Input) async throws -> Operations.Health.Output {
        let request = try RequestContextMiddleware.request()
        guard let sql = request.db as? any SQLDatabase else { throw APIFailure(.`internal`, "No SQL database.") }
        try await sql.raw("SELECT 1").run()
        let database = context.usesPostgres ? "postgresql" : "sqlite"
        return .ok(.init(body: .json(.init(status: "ok", database: database))))
    }
}

extension RelayAPI {
    /// The request plus its authenticated caller.
    func signedIn() async throws -> (Request, Caller) {
        let request = try RequestContextMiddleware.request()
        guard let caller = request.storage[CallerKey.self] else { throw APIFailure.unauthenticated }
        return (request, caller)
    }

    static func uuid(_ text: String, _ name: String) throws(APIFailure) -> UUID {
        guard let value = UUID(uuidString: text) else { throw APIFailure.malformed("`\(name)` is not a UUID.") }
        return value
    }

    static func userBody(_ user: UserRecord) throws -> Components.Schemas.User {
        .init(id: try user.requireID().canonicalString, email: user.email, displayName: user.displayName, hasAvatar: user.avatar != nil)
    }

    static func deviceKey(_ device: DeviceRecord) -> Components.Schemas.DeviceKey {
        .init(deviceId: device.deviceID.canonicalString, identity: .init(device.identity),
              registeredAt: device.registeredAt, retiredAt: device.retiredAt)
    }

    /// Key-change notices for: every current device of users who have a conversation with
    /// `userID`, and the user's own other current devices, for `publication` to deliver.
    /// Also drops the device's prekeys: they were signed by the key that changed.
    static func announceKeyChange(_ change: Components.Schemas.KeyChange.ChangePayload, userID: UUID, deviceID: UUID,
                                  identity: Data?, context: RelayContext, publishing publication: MailboxPublication,
                                  on db: any Database, now: Date) async throws {
        try await PrekeyStore.discard(DeviceAddress(userID: userID, deviceID: deviceID), on: db)
        let peers = try await ConversationRecord.query(on: db).filter(\.$peerID == userID).all().map(\.ownerID)
        let audience = Set(peers + [userID])
        let devices = try await DeviceRecord.query(on: db).filter(\.$userID ~~ Array(audience)).filter(\.$retiredAt == nil).all()
        let notice = Components.Schemas.KeyChange(userId: userID.canonicalString, deviceId: deviceID.canonicalString,
                                                  change: change, identity: identity.map { .init($0) })
        let payload = try StreamCoding.encoder().encode(notice)
        let sender = DeviceAddress(userID: userID, deviceID: deviceID)
        let recipients = devices.map { DeviceAddress(userID: $0.userID, deviceID: $0.deviceID) }.filter { $0 != sender }
        try await context.storeMailboxEntries(recipients.map {
            MailboxQueries.NewEntry(recipient: $0, kind: .keyChange, sender: sender, messageID: nil, payload: payload, receivedAt: now)
        }, in: db, publishing: publication)
    }
}
