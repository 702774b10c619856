import Vapor

/// Counts every answer by route pattern, method and status, and times it (`RelayMetrics`).
/// Outermost, so that refusals made by the middleware after it count with their status.
struct RequestMetricsMiddleware: AsyncMiddleware {
    let metrics: RelayMetrics
    let routes: KnownRoutes

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let start = ContinuousClock.now
        let route = routes.pattern(for: request.url.path)
        let method = request.method.rawValue
        do {
            let response = try await next.respond(to: request)
            metrics.answered(route: route, method: method, status: response.status.code, after: .now - start)
            return response
        } catch {
            let status = (error as? any AbortError)?.status.code ?? 500
            metrics.answered(route: route, method: method, status: status, after: .now - start)
            throw error
        }
    }
}
