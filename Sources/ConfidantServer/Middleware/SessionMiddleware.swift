import Vapor

/// Authenticates every `/v1` request except the public ones (health, sign-up, sign-in) before
/// anything reads the body, so an anonymous caller learns nothing but `unauthenticated`.
struct SessionMiddleware: AsyncMiddleware {
    let sessions: SessionService

    static let publicRoutes: Set<String> = [
        "GET /v1/health", "GET /v1/ready", "POST /v1/accounts", "POST /v1/sessions", "POST /v1/auth/sign-in",
        "POST /v1/auth/challenges",
    ]

    /// A sign-in transaction is its own credential (an unguessable id), before any session exists.
    static func isSignInStep(_ request: Request, path: String) -> Bool {
        (request.method == .GET || request.method == .POST) && path.hasPrefix("/v1/auth/sign-in/")
    }

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let path = request.url.path
        // HEAD is answered by the GET route, and is as public as it.
        let method = request.method == .HEAD ? HTTPMethod.GET : request.method
        if path.hasPrefix("/v1/"), !Self.publicRoutes.contains("\(method) \(path)"),
            !Self.isSignInStep(request, path: path)
        {
            request.storage[CallerKey.self] = try await sessions.authenticate(
                authorization: request.headers.first(name: .authorization))
        }
        return try await next.respond(to: request)
    }
}

struct CallerKey: StorageKey {
    typealias Value = Caller
}
