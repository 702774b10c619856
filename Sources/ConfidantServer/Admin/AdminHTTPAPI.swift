import ConfidantAPI
import Foundation
import Vapor

/// The admin API: `confidant admin`'s account, invite, statistics and audit actions over HTTP, under
/// `/admin/v1/` on the metrics listener (off unless `serve --admin-token-file`), for callers that
/// send the token from that file. Answers JSON; errors are Problems as on the API
/// (`ProblemMiddleware` maps `AdministrationError`).
struct AdminHTTPAPI: Sendable {
    let services: RelayServices
    let token: AdminToken

    /// The most bytes of a request body (a reason, an invite's settings).
    static let maximumBody: ByteCount = "4kb"

    func register(on app: Application) {
        let admin = app.grouped("admin", "v1").grouped(TokenCheck(token: token))
        let services = services
        admin.get("accounts") { request in
            let query = try Self.query(request)
            let administration = Self.administration(services, request)
            let accounts = try await administration.listAccounts(search: query.search, limit: query.limit ?? 100)
            return try Self.encode(accounts)
        }
        admin.get("accounts", ":account") { request in
            try Self.encode(try await Self.administration(services, request).account(try Self.account(request)))
        }
        admin.on(.POST, "accounts", ":account", "disable", body: .collect(maxSize: Self.maximumBody)) { request in
            let body = try request.content.decode(DisableBody.self, as: .json)
            return try Self.encode(
                try await Self.administration(services, request).disableAccount(
                    try Self.account(request), reason: body.reason))
        }
        admin.post("accounts", ":account", "enable") { request in
            try Self.encode(try await Self.administration(services, request).enableAccount(try Self.account(request)))
        }
        admin.delete("accounts", ":account") { request in
            try Self.encode(try await Self.administration(services, request).deleteAccount(try Self.account(request)))
        }
        admin.delete("accounts", ":account", "devices", ":device") { request in
            guard let device = request.parameters.get("device").flatMap(UUID.init(uuidString:)) else {
                throw APIFailure.malformed("The device is not an id; see GET /admin/v1/accounts/{account}.")
            }
            try await Self.administration(services, request).revokeDevice(device, of: try Self.account(request))
            return Response(status: .noContent)
        }
        admin.get("stats") { request in try Self.encode(try await Self.administration(services, request).statistics()) }
        admin.get("audit") { request in
            try Self.encode(
                try await Self.administration(services, request).audit(limit: try Self.query(request).limit ?? 50))
        }
        admin.get("invites") { request in
            try Self.encode(try await Self.administration(services, request).listInvites())
        }
        admin.on(.POST, "invites", body: .collect(maxSize: Self.maximumBody)) { request in
            let body = try request.content.decode(InviteBody.self, as: .json)
            let (code, invite) = try await Self.administration(services, request).createInvite(
                uses: body.uses ?? 1, lifetime: TimeInterval(body.expiresInSeconds ?? 7 * 86_400))
            return try Self.encode(CreatedInvite(code: code, invite: invite), status: .created)
        }
        admin.delete("invites", ":invite") { request in
            guard let id = request.parameters.get("invite").flatMap(UUID.init(uuidString:)) else {
                throw APIFailure.malformed("The invite is not an id; see GET /admin/v1/invites.")
            }
            guard try await Self.administration(services, request).revokeInvite(id) else {
                throw APIFailure.notFound("That invite")
            }
            return Response(status: .noContent)
        }
    }

    /// The administration as this caller: the audit names the HTTP API and the caller's address.
    private static func administration(_ services: RelayServices, _ request: Request) -> RelayAdministration {
        RelayAdministration(services: services, actor: "http \(request.remoteAddress?.ipAddress ?? "unknown")")
    }

    private struct Query: Decodable {
        var search: String?
        var limit: Int?
    }

    private struct DisableBody: Decodable {
        var reason: String?
    }

    private struct InviteBody: Decodable {
        var uses: Int?
        var expiresInSeconds: Int?
    }

    private struct CreatedInvite: Encodable {
        let code: String
        let invite: Invite
    }

    private static func query(_ request: Request) throws -> Query {
        let query = try request.query.decode(Query.self)
        if let limit = query.limit, !(1...AccountAdministration.maximumPage).contains(limit) {
            throw APIFailure.malformed("`limit` takes 1…\(AccountAdministration.maximumPage).")
        }
        if let search = query.search, search.utf8.count > 320 {
            throw APIFailure.malformed("`search` takes at most 320 bytes.")
        }
        return query
    }

    private static func account(_ request: Request) throws -> String {
        guard let account = request.parameters.get("account"), account.utf8.count <= 320 else {
            throw APIFailure.malformed("Name the account by its e-mail address or id.")
        }
        return account
    }

    private static func encode(_ value: some Encodable, status: HTTPResponseStatus = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let response = Response(status: status, body: .init(data: try encoder.encode(value)))
        response.headers.contentType = .json
        response.headers.replaceOrAdd(name: .cacheControl, value: "no-store")
        return response
    }
}

/// Lets through only requests with the admin token; others learn only `unauthenticated`.
private struct TokenCheck: AsyncMiddleware {
    let token: AdminToken

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        guard token.admits(authorization: request.headers.first(name: .authorization)) else {
            throw APIFailure(
                .unauthenticated, "The admin API needs `Authorization: Bearer` with the token from --admin-token-file.")
        }
        return try await next.respond(to: request)
    }
}
