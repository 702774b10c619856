import Foundation
import Vapor

extension RoutesBuilder {
    /// Registers `route` for GET.
    func get(_ route: AppRoute, use handler: @escaping @Sendable (Request) async throws -> Response) {
        on(.GET, route.pathComponents, use: handler)
    }

    /// Registers `route` for POST; `maximumBody` collects a body larger than the app's default.
    func post(
        _ route: AppRoute, maximumBody: Int? = nil, use handler: @escaping @Sendable (Request) async throws -> Response
    ) {
        on(
            .POST, route.pathComponents, body: maximumBody.map { .collect(maxSize: ByteCount(value: $0)) } ?? .collect,
            use: handler)
    }
}

extension Request {
    /// The UUID the route's path holds under `key`, if it is one.
    func uuid(_ key: RouteKey) -> UUID? {
        parameters.get(key.rawValue).flatMap(UUID.init(uuidString:))
    }

    /// The text the route's path holds under `key`.
    func text(_ key: RouteKey) -> String? {
        parameters.get(key.rawValue)
    }

    /// A redirect to `route` (303 after a form, as Vapor's default).
    func redirect(to route: AppRoute, query: KeyValuePairs<String, String> = [:], fragment: String? = nil)
        -> Response
    {
        redirect(to: route.path(query: query, fragment: fragment))
    }
}
