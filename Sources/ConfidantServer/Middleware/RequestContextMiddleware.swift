import Vapor

/// Makes the Vapor request reachable from the generated OpenAPI handlers, which only see typed
/// input: they need its database, headers (the bearer token) and peer address.
struct RequestContextMiddleware: AsyncMiddleware {
    @TaskLocal static var current: Request?

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        try await Self.$current.withValue(request) { try await next.respond(to: request) }
    }

    static func request() throws -> Request {
        guard let request = current else { throw APIFailure(.`internal`, "The request context is missing.") }
        return request
    }
}
