import ConfidantAPI
import Foundation

/// Prekeys for v2 sessions (docs/PROTOCOL.md §9.3).
extension RelayAPI {
    func prekeyStatus(_ input: Operations.PrekeyStatus.Input) async throws -> Operations.PrekeyStatus.Output {
        .ok(.init(body: .json(try await services.prekeys.status(of: try caller().address))))
    }

    func uploadPrekeys(_ input: Operations.UploadPrekeys.Input) async throws -> Operations.UploadPrekeys.Output {
        let caller = try caller()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        return .ok(.init(body: .json(try await services.prekeys.upload(body, for: caller.address))))
    }

    func claimPrekeyBundles(_ input: Operations.ClaimPrekeyBundles.Input) async throws
        -> Operations.ClaimPrekeyBundles.Output
    {
        let caller = try caller()
        let userID = try Self.uuid(input.path.userId, "userId")
        let device = try input.query.deviceId.map { text throws(APIFailure) in try Self.uuid(text, "deviceId") }
        return .ok(
            .init(body: .json(try await services.prekeys.claimBundles(of: userID, device: device, by: caller.userID))))
    }
}
