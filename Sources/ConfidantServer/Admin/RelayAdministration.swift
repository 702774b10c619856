import Foundation

/// What `confidant admin` does to a relay's database, with or without the server running: the
/// relay is opened (and its schema brought up to date) but does not listen.
///
/// ```swift
/// let relay = try await RelayServer(configuration: configuration)
/// let (code, _) = try await relay.administration.createInvite(uses: 1, lifetime: 7 * 86_400)
/// await relay.shutdown()
/// ```
public struct RelayAdministration: Sendable {
    let services: RelayServices

    private var invites: InviteService {
        InviteService(database: services.database, now: services.configuration.now)
    }

    /// Makes an invite code for `uses` sign-ups, valid for `lifetime` seconds; the code is
    /// returned only here.
    public func createInvite(uses: Int, lifetime: TimeInterval) async throws -> (code: String, invite: Invite) {
        try await invites.create(uses: uses, lifetime: lifetime)
    }

    /// Every invite, newest first.
    public func listInvites() async throws -> [Invite] { try await invites.list() }

    /// Revokes the invite `id`; false when there is none.
    public func revokeInvite(_ id: UUID) async throws -> Bool { try await invites.revoke(id) }
}

extension RelayServer {
    /// The operator's actions on this relay's database.
    public var administration: RelayAdministration { RelayAdministration(services: services) }
}

/// Why an administrative action was refused.
public enum AdministrationError: Error, Equatable, CustomStringConvertible {
    /// A value outside what the action takes.
    case invalidValue(String)

    public var description: String {
        switch self {
        case .invalidValue(let why): "Refused: \(why)."
        }
    }
}
