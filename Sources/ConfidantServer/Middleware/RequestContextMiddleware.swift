import Vapor

/// Makes the Vapor request reachable from the generated OpenAPI handlers, which only see typed
/// input: they need its database, headers (the bearer token) and peer address.
struct RequestContextMiddleware: AsyncMiddleware {
    @TaskLocal static var current: Request?

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        try await Self.$current.withValue(request) { try await next.respond(to: request) }
    }

    /// The logger of the request being handled, whose lines carry its `request-id`; `fallback`
    /// outside a request (maintenance, the PostgreSQL listener).
    static func logger(or fallback: Logger) -> Logger { current?.logger ?? fallback }

    static func request() throws -> Request {
        guard let request = current else { throw APIFailure(.`internal`, "The request context is missing.") }
        return request
    }
}
