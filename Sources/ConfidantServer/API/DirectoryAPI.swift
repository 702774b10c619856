import ConfidantAPI
import Foundation

/// The directory of users, their device keys and key history, and one's own devices: list, name, remove.
extension RelayAPI {
    func listUsers(_ input: Operations.ListUsers.Input) async throws -> Operations.ListUsers.Output {
        guard (input.query.query?.count ?? 0) <= 254, (input.query.after?.count ?? 0) <= 400 else {
            throw APIFailure.malformed("`query` is at most 254 characters and `after` at most 400.")
        }
        let page = try await services.directory.users(
            except: try caller().userID, prefix: input.query.query, after: input.query.after,
            limit: try Self.limit(input.query.limit, default: 50, maximum: DirectoryService.maximumPage))
        return .ok(.init(body: .json(.init(users: try page.users.map { try $0.wire }, next: page.next))))
    }

    func getUser(_ input: Operations.GetUser.Input) async throws -> Operations.GetUser.Output {
        _ = try caller()
        let userID = try Self.uuid(input.path.userId, "userId")
        // An account whose address is not verified is not in the directory, by id either.
        guard let user = try await services.accounts.user(userID), user.emailVerifiedAt != nil else {
            throw APIFailure.notFound("That user")
        }
        let devices = try await services.devices.current(of: userID)
        return .ok(.init(body: .json(.init(user: try user.wire, devices: devices.map(\.wire)))))
    }

    func keyHistory(_ input: Operations.KeyHistory.Input) async throws -> Operations.KeyHistory.Output {
        _ = try caller()
        let userID = try Self.uuid(input.path.userId, "userId")
        guard try await services.accounts.user(userID) != nil else { throw APIFailure.notFound("That user") }
        return .ok(.init(body: .json(try await services.devices.history(of: userID).map(\.wire))))
    }

    func listOwnDevices(_ input: Operations.ListOwnDevices.Input) async throws -> Operations.ListOwnDevices.Output {
        let caller = try caller()
        return .ok(.init(body: .json(try await services.devices.current(of: caller.userID).map(\.ownWire))))
    }

    func renameDevice(_ input: Operations.RenameDevice.Input) async throws -> Operations.RenameDevice.Output {
        let caller = try caller()
        let deviceID = try Self.uuid(input.path.deviceId, "deviceId")
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send the name as JSON.") }
        try await services.devices.rename(deviceID, of: caller, to: try DeviceService.deviceName(body.name))
        return .noContent(.init())
    }

    func removeDevice(_ input: Operations.RemoveDevice.Input) async throws -> Operations.RemoveDevice.Output {
        let caller = try caller()
        try await services.devices.remove(try Self.uuid(input.path.deviceId, "deviceId"), of: caller)
        return .noContent(.init())
    }
}
