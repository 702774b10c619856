import ConfidantAPI
import ConfidantCrypto
import Foundation
import OpenAPIRuntime

/// Sign-up, password sign-in, sign-out, the account and its avatar.
extension RelayAPI {
    func signUp(_ input: Operations.SignUp.Input) async throws -> Operations.SignUp.Output {
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let user = try await services.accounts.signUp(
            .init(
                email: body.email, password: body.password, firstName: body.firstName, lastName: body.lastName,
                displayName: body.displayName, avatar: body.avatar.map { Data($0.data) }, address: try clientAddress(),
                invite: body.invite))
        return .created(.init(body: .json(try user.wire)))
    }

    func signIn(_ input: Operations.SignIn.Input) async throws -> Operations.SignIn.Output {
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let session = try await services.signIn.signIn(
            email: body.email, password: body.password, identity: try Self.identity(body.identity.data),
            proof: body.proof, address: try clientAddress())
        return .created(.init(body: .json(session)))
    }

    func signOut(_ input: Operations.SignOut.Input) async throws -> Operations.SignOut.Output {
        try await services.sessions.signOut(try caller())
        return .noContent(.init())
    }

    func currentAccount(_ input: Operations.CurrentAccount.Input) async throws -> Operations.CurrentAccount.Output {
        let caller = try caller()
        guard let user = try await services.accounts.user(caller.userID) else { throw APIFailure.unauthenticated }
        let expires = try await services.sessions.expiry(of: caller)
        return .ok(
            .init(
                body: .json(
                    .init(user: try user.wire, deviceId: caller.deviceID.canonicalString, sessionExpiresAt: expires))))
    }

    func updateProfile(_ input: Operations.UpdateProfile.Input) async throws -> Operations.UpdateProfile.Output {
        let caller = try caller()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let user = try await services.accounts.updateProfile(
            of: caller, firstName: body.firstName, lastName: body.lastName, displayName: body.displayName)
        return .ok(.init(body: .json(try user.wire)))
    }

    func deleteAccount(_ input: Operations.DeleteAccount.Input) async throws -> Operations.DeleteAccount.Output {
        let caller = try caller()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        try await services.accounts.delete(caller, password: body.password)
        return .noContent(.init())
    }

    func setAvatar(_ input: Operations.SetAvatar.Input) async throws -> Operations.SetAvatar.Output {
        let caller = try caller()
        let limit = services.configuration.maximumAvatarBytes
        let (body, declared): (HTTPBody, String) =
            switch input.body {
            case .png(let body): (body, AvatarImage.png)
            case .jpeg(let body): (body, AvatarImage.jpeg)
            }
        let bytes: Data
        do { bytes = try await Data(collecting: body, upTo: limit) } catch {
            throw APIFailure.tooLarge("The avatar", limit: limit)
        }
        try await services.accounts.setAvatar(
            try AvatarImage(checking: bytes, declared: declared, limit: limit), of: caller)
        return .noContent(.init())
    }

    func getAvatar(_ input: Operations.GetAvatar.Input) async throws -> Operations.GetAvatar.Output {
        _ = try caller()
        let image = try await services.accounts.avatar(of: try Self.uuid(input.path.userId, "userId"))
        let body = HTTPBody([UInt8](image.bytes))
        return .ok(.init(body: image.type == AvatarImage.jpeg ? .jpeg(body) : .png(body)))
    }

    /// A device identity as sent by a client signing in.
    static func identity(_ bytes: some Collection<UInt8>) throws(APIFailure) -> PublicIdentity {
        do {
            return try PublicIdentity(serialized: Data(bytes))
        } catch {
            throw APIFailure(
                .invalidIdentity, "The device identity is not a valid, self-signed public identity: \(error).")
        }
    }
}
