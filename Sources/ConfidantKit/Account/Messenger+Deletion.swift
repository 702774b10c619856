import ConfidantAPI
import Foundation

extension Messenger {
    /// Deletes the account on the server — its devices, sessions, mailboxes and files — after
    /// checking the password again; this profile is signed out. Its local history stays until the
    /// profile directory is deleted.
    public func deleteAccount(password: String) async throws {
        let body = Components.Schemas.DeleteAccountRequest(password: password)
        switch try await relay.call({ try await $0.deleteAccount(body: .json(body)) }) {
        case .noContent: break
        case .default(let status, let response): throw problem(status, response)
        }
        await stopLive()
        try forgetToken()
    }
}
