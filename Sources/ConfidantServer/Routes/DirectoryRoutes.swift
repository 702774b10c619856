import ConfidantAPI
import Fluent
import Foundation
import Vapor

extension RelayAPI {
    func listUsers(_ input: Operations.ListUsers.Input) async throws -> Operations.ListUsers.Output {
        let (request, caller) = try await signedIn()
        let limit = min(max(input.query.limit ?? 50, 1), 200)
        let prefix = (input.query.query ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        var query = UserRecord.query(on: request.db).filter(\.$id != caller.userID).sort(\.$email).limit(limit + 1)
        if let after = input.query.after {
            guard let data = Data(base64URL: after), let email = String(data: data, encoding: .utf8) else {
                throw APIFailure.malformed("`after` is not a cursor this server gave out.")
            }
            query = query.filter(\.$email > email)
        }
        if !prefix.isEmpty {
            query = query.group(.or) { $0.filter(\.$email =~ prefix).filter(\.$displayNameKey =~ prefix) }
        }
        let rows = try await query.all()
        // LIKE treats % and _ as wildcards; keep only true prefixes.
        let page = rows.prefix(limit).filter { prefix.isEmpty || $0.email.hasPrefix(prefix) || $0.displayNameKey.hasPrefix(prefix) }
        let next = rows.count > limit ? rows.prefix(limit).last.map { Data($0.email.utf8).base64URLEncoded } : nil
        return .ok(.init(body: .json(.init(users: try page.map(Self.userBody), next: next))))
    }

    func getUser(_ input: Operations.GetUser.Input) async throws -> Operations.GetUser.Output {
        let (request, _) = try await signedIn()
        let userID = try Self.uuid(input.path.userId, "userId")
        guard let user = try await UserRecord.find(userID, on: request.db) else { throw APIFailure.notFound("That user") }
        let devices = try await DeviceRecord.query(on: request.db).filter(\.$userID == userID).filter(\.$retiredAt == nil)
            .sort(\.$registeredAt).all()
        return .ok(.init(body: .json(.init(user: try Self.userBody(user), devices: devices.map(Self.deviceKey)))))
    }

    func keyHistory(_ input: Operations.KeyHistory.Input) async throws -> Operations.KeyHistory.Output {
        let (request, _) = try await signedIn()
        let userID = try Self.uuid(input.path.userId, "userId")
        guard try await UserRecord.find(userID, on: request.db) != nil else { throw APIFailure.notFound("That user") }
        let devices = try await DeviceRecord.query(on: request.db).filter(\.$userID == userID).sort(\.$registeredAt).all()
        return .ok(.init(body: .json(devices.map(Self.deviceKey))))
    }

    func removeDevice(_ input: Operations.RemoveDevice.Input) async throws -> Operations.RemoveDevice.Output {
        let (request, caller) = try await signedIn()
        let deviceID = try Self.uuid(input.path.deviceId, "deviceId")
        let userID = caller.userID
        let now = Date()
        try await context.write(request.db) { db, publication in
            guard let device = try await DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$deviceID == deviceID)
                .filter(\.$retiredAt == nil).first()
            else { throw APIFailure.notFound("That device") }
            device.retiredAt = now
            try await device.update(on: db)
            try await SessionRecord.query(on: db).filter(\.$userID == userID).filter(\.$deviceID == deviceID)
                .filter(\.$revokedAt == nil).set(\.$revokedAt, to: now).update()
            try await MailboxRecord.query(on: db).filter(\.$recipientUserID == userID).filter(\.$recipientDeviceID == deviceID).delete()
            try await Self.announceKeyChange(.removed, userID: userID, deviceID: deviceID, identity: nil, context: context,
                                             publishing: publication, on: db, now: now)
        }
        context.sessions.evict(userID: userID, deviceID: deviceID)
        return .noContent(.init())
    }
}

extension Data {
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
