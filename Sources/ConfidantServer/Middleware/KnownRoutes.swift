import Synchronization
import Vapor

/// The paths the server answers and with which methods, so that a request with a method a path
/// does not take is answered `405 Method Not Allowed` with `Allow`, not `404`.
final class KnownRoutes: Sendable {
    private struct Entry: Sendable {
        /// A constant component, `:` for a parameter, `**` for the rest of the path.
        let pattern: [String]
        let method: String
    }
    private let entries = Mutex<[Entry]>([])

    /// Records the application's routes (after they are all registered).
    func record(_ routes: [Route]) {
        let recorded = routes.map { route in
            Entry(
                pattern: route.path.map { component in
                    switch component {
                    case .constant(let text): text
                    case .parameter: ":"
                    case .anything: ":"
                    case .catchall: "**"
                    }
                }, method: route.method.rawValue)
        }
        entries.withLock { $0 = recorded }
    }

    /// The methods `path` takes (HEAD with GET), sorted; empty when no route has this path.
    func methods(for path: String) -> [String] {
        let components = path.split(separator: "/").map(String.init)
        let entries = entries.withLock { $0 }
        var methods = Set(entries.filter { Self.matches($0.pattern, components) }.map(\.method))
        if methods.contains("GET") { methods.insert("HEAD") }
        return methods.sorted()
    }

    /// The route pattern `path` matches (`/v1/devices/:/name`), for a metric's label; "unmatched"
    /// for a path no route has, so that labels stay few and carry no value from a path.
    func pattern(for path: String) -> String {
        let components = path.split(separator: "/").map(String.init)
        let entries = entries.withLock { $0 }
        guard let entry = entries.first(where: { Self.matches($0.pattern, components) }) else { return "unmatched" }
        return "/" + entry.pattern.joined(separator: "/")
    }

    private static func matches(_ pattern: [String], _ components: [String]) -> Bool {
        for (index, part) in pattern.enumerated() {
            if part == "**" { return components.count >= index }
            guard index < components.count, part == ":" || part == components[index] else { return false }
        }
        return pattern.count == components.count
    }
}

/// Answers a method a known path does not take with `405` and `Allow`, before anything else
/// looks at the request (its session, its body).
struct MethodMiddleware: AsyncMiddleware {
    let routes: KnownRoutes

    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let allowed = routes.methods(for: request.url.path)
        if !allowed.isEmpty, !allowed.contains(request.method.rawValue) {
            throw APIFailure(
                .methodNotAllowed,
                "\(request.url.path) takes \(allowed.joined(separator: ", ")), not \(request.method).",
                status: .methodNotAllowed)
        }
        return try await next.respond(to: request)
    }
}
