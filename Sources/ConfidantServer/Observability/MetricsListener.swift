import Foundation
import Logging
import Vapor

/// Where `GET /metrics` is served: a listener of its own, apart from the API, so that an
/// operator can keep it on loopback or an internal network while the API faces users.
public struct MetricsAddress: Sendable, Equatable {
    public var host: String
    /// 0 asks the system for a free port (tests).
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int) {
        self.host = host
        self.port = port
    }
}

/// The metrics listener: a second, minimal Vapor application with `GET /metrics` in Prometheus's
/// text format and, when configured, the admin API; anything else is 404.
final class MetricsListener: Sendable {
    private let application: Application

    /// With `admin`, the listener also serves the admin API (`AdminHTTPAPI`), its errors as Problems.
    init(
        address: MetricsAddress, logger: Logger, admin: AdminHTTPAPI? = nil,
        scrape: @escaping @Sendable () async throws -> [UInt8]
    ) async throws {
        var environment = Environment(name: "production", arguments: ["confidant"])
        environment.commandInput.arguments = []
        let app = try await Application.make(environment)
        app.logger = logger
        app.http.server.configuration.hostname = address.host
        app.http.server.configuration.port = address.port
        app.http.server.configuration.serverName = "confidant"
        app.middleware = Middlewares()
        let routes = KnownRoutes()
        if let admin {
            app.middleware.use(ProblemMiddleware(outages: admin.services.outages, routes: routes))
        } else {
            app.middleware.use(ErrorMiddleware.default(environment: app.environment))
        }
        app.get("metrics") { _ in
            Response(
                status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(buffer: ByteBuffer(bytes: try await scrape())))
        }
        if let admin {
            admin.register(on: app)
            routes.record(app.routes.all)
        }
        application = app
    }

    /// Starts listening; returns the bound port.
    func start(_ address: MetricsAddress) async throws -> Int {
        try await application.asyncBoot()
        try await application.server.start(address: .hostname(address.host, port: address.port))
        return application.http.server.shared.localAddress?.port ?? address.port
    }

    func shutdown() async {
        await application.server.shutdown()
        try? await application.asyncShutdown()
    }
}
