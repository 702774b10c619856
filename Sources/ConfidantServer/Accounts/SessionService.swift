import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation
import SQLKit

/// Bearer sessions: who a token belongs to (cached for a few seconds), opening a session for a
/// device that passed sign-in, and signing out.
struct SessionService: Sendable {
    let database: RelayDatabase
    let devices: DeviceService
    let cache: SessionCache
    let activity: DeviceActivity
    let revoker: SessionRevoker
    let lifetime: TimeInterval
    let now: @Sendable () -> Date

    /// The caller behind `Authorization: Bearer …`, or `unauthenticated`.
    func authenticate(authorization header: String?) async throws -> Caller {
        guard let token = SessionToken.bearer(header), (20...100).contains(token.count) else {
            throw APIFailure.unauthenticated
        }
        let hash = SessionToken.hash(String(token))
        let now = now()
        if let caller = cache.caller(for: hash, now: now) {
            await activity.seen(caller, now: now)
            return caller
        }
        typealias Column = SessionRecord.Column
        guard
            let row = try await database.sql.select()
                .columns("id", Column.userID, Column.deviceID, Column.expiresAt, Column.revokedAt)
                .from(SessionRecord.schema)
                .where(Column.tokenHash, .equal, hash)
                .first()
        else { throw APIFailure.unauthenticated }
        let expires = try row.decode(column: Column.expiresAt, as: Date.self)
        guard try row.decode(column: Column.revokedAt, as: Date?.self) == nil, expires > now else {
            throw APIFailure.unauthenticated
        }
        let caller = Caller(
            userID: try row.decode(column: Column.userID, as: UUID.self),
            deviceID: try row.decode(column: Column.deviceID, as: UUID.self),
            sessionID: try row.decode(column: "id", as: UUID.self))
        cache.remember(caller, for: hash, sessionExpires: expires, now: now)
        await activity.seen(caller, now: now)
        return caller
    }

    /// Registers the device (announcing a new or replaced key), remembers the address and creates
    /// a session, in one transaction that also clears the sign-in's throttle keys and, when the
    /// sign-in answered a code sent to the address (`emailProven`), marks the address verified.
    func open(
        for user: UserRecord, identity: PublicIdentity, address: String, resetting keys: [String],
        throttle: Throttle, emailProven: Bool = false
    ) async throws -> Components.Schemas.Session {
        let userID = try user.requireID()
        let token = SessionToken.generate()
        let now = now()
        let expires = now.addingTimeInterval(lifetime)
        let deviceID = identity.deviceID
        let verify = emailProven && user.emailVerifiedAt == nil
        let replaced = try await devices.mailbox.write { [devices] db, publication -> Bool in
            // Checked in the transaction: an operator may disable the account meanwhile.
            guard try await UserRecord.query(on: db).filter(\.$id == userID).filter(\.$disabledAt == nil).count() == 1
            else { throw Self.disabled }
            try await throttle.reset(keys, on: db)
            if verify {
                try await UserRecord.query(on: db).filter(\.$id == userID).set(\.$emailVerifiedAt, to: now).update()
            }
            let change = try await devices.register(identity, of: userID, at: now, in: db, publishing: publication)
            try await SessionRecord(
                userID: userID, deviceID: deviceID, tokenHash: token.hash, createdAt: now, expiresAt: expires
            ).create(on: db)
            if let known = try await SignInAddressRecord.query(on: db).filter(\.$userID == userID).filter(
                \.$address == address
            ).first() {
                known.lastSeen = now
                try await known.update(on: db)
            } else {
                try await SignInAddressRecord(userID: userID, address: address, lastSeen: now).create(on: db)
            }
            return change == .replaced
        }
        return .init(
            token: token.text, expiresAt: expires, user: try user.wire, deviceId: deviceID.canonicalString,
            keyChanged: replaced)
    }

    static let disabled = APIFailure(
        .accountDisabled, "The server's operator disabled this account; ask them to enable it again.")

    /// Revokes the caller's session.
    func signOut(_ caller: Caller) async throws {
        let now = now()
        try await database.write { db in
            try await SessionRecord.query(on: db).filter(\.$id == caller.sessionID).set(\.$revokedAt, to: now).update()
        }
        await revoker.revoked(.session(caller.sessionID))
    }

    /// When the caller's session expires.
    func expiry(of caller: Caller) async throws -> Date {
        guard let session = try await SessionRecord.find(caller.sessionID, on: database.db) else {
            throw APIFailure.unauthenticated
        }
        return session.expiresAt
    }
}
