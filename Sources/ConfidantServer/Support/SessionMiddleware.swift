import Vapor

/// Authenticates every `/v1` request except the public ones (health, sign-up, sign-in) before
/// anything reads the body, so an anonymous caller learns nothing but `unauthenticated`.
struct SessionMiddleware: AsyncMiddleware {
    let context: RelayContext

    static let publicRoutes: Set<String> = ["GET /v1/health", "POST /v1/accounts", "POST /v1/sessions"]

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let path = request.url.path
        if path.hasPrefix("/v1/"), !Self.publicRoutes.contains("\(request.method) \(path)") {
            request.storage[CallerKey.self] = try await context.authenticate(request)
        }
        return try await next.respond(to: request)
    }
}

struct CallerKey: StorageKey {
    typealias Value = Caller
}
