import ConfidantAPI
import Foundation

extension Messenger {
    /// Changes what others see of this account: the display name, first and last name. What is
    /// nil stays. The directory lists the new name at once; peers' devices take it the next time
    /// they look up this account's keys (every send does).
    /// - Throws: `ConfidantKitError.server` with `invalid_display_name` or `invalid_name` when
    ///   the server refuses a name (1 to 100 characters, no control characters; names 1 to 50).
    public func updateProfile(displayName: String? = nil, firstName: String? = nil, lastName: String? = nil)
        async throws
    {
        let body = Components.Schemas.ProfileUpdate(firstName: firstName, lastName: lastName, displayName: displayName)
        let user: Components.Schemas.User
        switch try await relay.call({ try await $0.updateProfile(body: .json(body)) }) {
        case .ok(let ok): user = try ok.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        try accountChanged { $0.displayName = user.displayName }
    }
}
