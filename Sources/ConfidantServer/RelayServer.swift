import ConfidantAPI
import Fluent
import FluentPostgresDriver
import FluentSQLiteDriver
import Foundation
import Logging
import OpenAPIRuntime
import OpenAPIVapor
import Synchronization
import Vapor

/// The Confidant relay: one Vapor application with its database, mailbox hub and routes.
///
/// ```swift
/// let server = try await RelayServer(configuration: .embedded())
/// let port = try await server.start()
/// …
/// try await server.shutdown()
/// ```
public final class RelayServer: Sendable {
    public let configuration: ServerConfiguration
    let application: Application
    let hub = MailboxHub()
    private let sessionCache = SessionCache()
    private let listener: PostgresMailboxListener?
    let services: RelayServices
    private let maintenance = Mutex<Task<Void, Never>?>(nil)
    /// On SQLite: reads the revocations other processes recorded (`RevocationFeed`).
    private let revocationFeed = Mutex<Task<Void, Never>?>(nil)
    private let certificates: ServerCertificates?
    /// Password hashes (bcrypt, slow on purpose) run here, apart from the database's statements.
    private let passwordHashing: NIOThreadPool
    /// With `configuration.metrics`: what is counted, and where it is served.
    let metrics: RelayMetrics?
    private let metricsListener: MetricsListener?
    private let boundMetricsPort = Mutex<Int?>(nil)

    public init(configuration: ServerConfiguration, logger: Logger = Logger(label: "confidant.relay")) async throws {
        try configuration.validate()
        self.configuration = configuration
        certificates = try configuration.tls.map { files throws(TLSFilesError) in try ServerCertificates(files: files) }
        var environment = Environment(name: "production", arguments: ["confidant"])
        environment.commandInput.arguments = []
        let app = try await Application.make(environment)
        app.logger = logger
        // Vapor's thread pool (the process's shared one, a thread per core) runs SQLite's
        // statements; password hashes go to a pool of their own, so that two sign-ins hashing do
        // not hold up every statement. (Not a pool of the application's own for SQLite: Vapor shuts
        // that down with the application, and a connection SQLiteNIO closes after that stays open —
        // an assertion failure in a debug build, seen in CI.)
        passwordHashing = NIOThreadPool(numberOfThreads: System.coreCount)
        passwordHashing.start()
        self.application = app
        var ownWriteConnection: RelayDatabase?
        do {
            // The owner's alone: 0700, refused when other users can write it.
            try DataDirectory.prepare(configuration.dataDirectory)
            switch configuration.database {
            case .sqlite(let path):
                let parent = URL(fileURLWithPath: path).deletingLastPathComponent()
                try DataDirectory.prepareDirectory(parent)
                try DataDirectory.prepareDatabaseFile(path)
                // Several connections per event loop: a write transaction must not hold up the reads
                // (sessions, mailbox pages, streams) that share its event loop.
                app.databases.use(
                    .sqlite(
                        .file(path), maxConnectionsPerEventLoop: 4,
                        connectionPoolTimeout: .seconds(Int64(configuration.databaseWaitSeconds)), sqlLogLevel: .trace),
                    as: .sqlite)
                listener = nil
            case .postgres(let url):
                var postgres = try SQLPostgresConfiguration(url: url)
                postgres.coreConfiguration.options.connectTimeout = .seconds(
                    Int64(configuration.postgresConnectSeconds))
                // The driver's default is one connection per event loop: a request waiting on a
                // row lock would hold up every other request on its loop.
                app.databases.use(
                    .postgres(
                        configuration: postgres,
                        maxConnectionsPerEventLoop: configuration.postgresConnectionsPerEventLoop,
                        connectionPoolTimeout: .seconds(Int64(configuration.databaseWaitSeconds)),
                        encodingContext: .default, decodingContext: .default, sqlLogLevel: .trace),
                    as: .psql)
                listener = PostgresMailboxListener(
                    configuration: postgres.coreConfiguration, hub: hub, sessions: sessionCache, logger: logger)
            }
            for migration in Self.migrations { app.migrations.add(migration) }
            if case .sqlite = configuration.database, let sql = app.db as? any SQLDatabase {
                // WAL lets readers (mailbox fetches, streams) run while a message is written.
                try await sql.raw("PRAGMA journal_mode=WAL").run()
            }
            try await app.autoMigrate()
            var sqlitePath: String?
            if case .sqlite(let path) = configuration.database { sqlitePath = path }
            // Fluent logs every model query at debug with its values (addresses, hashes), and its
            // pool its waits, neither with the request's id: those lines only at trace.
            var databaseLogger = app.logger
            if databaseLogger.logLevel == .debug { databaseLogger.logLevel = .info }
            let database = RelayDatabase(
                db: app.databases.database(logger: databaseLogger, on: app.eventLoopGroup.any()) ?? app.db,
                engine: listener == nil ? .sqlite : .postgresql, sqlitePath: sqlitePath,
                synchronous: configuration.sqliteSynchronous,
                busyTimeoutMilliseconds: configuration.sqliteBusyTimeoutMilliseconds,
                postgresWriteSeconds: configuration.postgresWriteSeconds)
            ownWriteConnection = database
            let services = try RelayServices(
                configuration: configuration, database: database, hub: hub, cache: sessionCache,
                passwordHashing: passwordHashing,
                logger: logger)
            self.services = services
            let metrics = configuration.metrics.map { _ in RelayMetrics() }
            self.metrics = metrics
            if let address = configuration.metrics, let metrics {
                var admin: AdminHTTPAPI?
                if let file = configuration.adminTokenFile {
                    admin = AdminHTTPAPI(services: services, token: try AdminToken(file: file))
                }
                metricsListener = try await MetricsListener(address: address, logger: logger, admin: admin) {
                    [hub, configuration] in
                    try await metrics.scrape(database: services.database, hub: hub, configuration: configuration)
                }
            } else {
                metricsListener = nil
            }
            do {
                try routes(app, services: services)
            } catch {
                await metricsListener?.shutdown()
                throw error
            }
        } catch {
            try? await app.asyncShutdown()
            await ownWriteConnection?.close()
            try? await passwordHashing.shutdownGracefully()
            throw error
        }
    }

    /// The schema's versions, in order (`Migrations/`).
    static let migrations: [any Migration] = [
        CreateSchema(), AddBackupNames(), AddSignIn(), AddPrekeys(), AddHardening(), AddDeviceProofs(),
        AddAttachments(), ReindexMessages(), KeyPostedMessages(), CountMailboxEntries(), AddInvites(), AddDeviceNames(),
        AddSharedBodies(), AddAdministration(), AddBlobChunks(),
    ]

    /// The map: middleware, the OpenAPI handlers, the stream.
    private func routes(_ app: Application, services: RelayServices) throws {
        app.middleware = Middlewares()
        let knownRoutes = KnownRoutes()
        if let metrics { app.middleware.use(RequestMetricsMiddleware(metrics: metrics, routes: knownRoutes)) }
        app.middleware.use(ProblemMiddleware(outages: services.outages, routes: knownRoutes))
        app.middleware.use(MethodMiddleware(routes: knownRoutes))
        app.middleware.use(RequestContextMiddleware())
        app.middleware.use(SessionMiddleware(sessions: services.sessions))
        app.middleware.use(BodyLimitMiddleware(configuration: configuration))
        app.http.server.configuration.hostname = configuration.host
        app.http.server.configuration.port = configuration.port
        app.http.server.configuration.serverName = "confidant"
        app.http.server.configuration.tlsConfiguration = certificates?.configuration
        // Silent HTTP connections are closed; an upgraded stream is pinged instead, and a peer that
        // stopped answering goes (`StreamSocket`).
        app.http.server.configuration.idleTimeout = .seconds(Int64(configuration.idleTimeoutSeconds))

        let document = try APIDocument.yaml()
        app.get("openapi.yaml") { _ in
            Response(status: .ok, headers: ["Content-Type": "application/yaml"], body: .init(data: document))
        }
        app.get("join") { request in JoinPage.response(for: request) }
        let transport = VaporTransport(routesBuilder: app)
        try RelayAPI(services: services).registerHandlers(
            on: transport, serverURL: try Servers.Server1.url(), configuration: APIConfiguration.default)
        MailboxStream(
            mailbox: services.mailbox, configuration: configuration, outages: services.outages,
            identity: { [devices = services.devices] in try await devices.identity(of: $0) }
        ).register(on: app)
        knownRoutes.record(app.routes.all)
    }

    /// Starts listening; returns the bound port (useful with port 0).
    @discardableResult
    public func start() async throws -> Int {
        try await application.asyncBoot()
        try await application.server.start(address: .hostname(configuration.host, port: configuration.port))
        if let metricsListener, let address = configuration.metrics {
            let port = try await metricsListener.start(address)
            boundMetricsPort.withLock { $0 = port }
        }
        listener?.start()
        let interval = configuration.maintenanceInterval
        let logger = application.logger
        maintenance.withLock { task in
            task = Task { [weak self] in
                while !Task.isCancelled {
                    do { try await Task.sleep(for: interval) } catch { return }
                    do {
                        _ = try await self?.runMaintenance()
                    } catch {
                        logger.warning("maintenance failed; the next run catches up", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
        if !services.database.isPostgres {
            let feed = RevocationFeed(database: services.database, cache: sessionCache, hub: hub, logger: logger)
            let every = configuration.revocationPollInterval
            revocationFeed.withLock { $0 = Task { await feed.run(every: every) } }
        }
        return application.http.server.shared.localAddress?.port ?? configuration.port
    }

    /// Reads the TLS certificate and key again (a renewed certificate); connections made from
    /// now on present them. On failure the ones in use stay, and the error says why.
    public func reloadCertificates() throws(TLSFilesError) {
        try certificates?.reload()
    }

    /// The port `GET /metrics` is served on once started; nil without `configuration.metrics`.
    public var metricsPort: Int? { boundMetricsPort.withLock { $0 } }

    /// Stops accepting, lets requests in flight finish, closes streams and the database.
    public func shutdown() async {
        await metricsListener?.shutdown()
        maintenance.withLock { $0?.cancel() }
        let feed = revocationFeed.withLock { task in
            defer { task = nil }
            return task
        }
        feed?.cancel()
        await feed?.value
        listener?.stop()
        hub.finishAll()
        await application.server.shutdown()
        await services.database.settleCheckpoints()
        try? await application.asyncShutdown()
        await services.database.close()
        try? await passwordHashing.shutdownGracefully()
    }
}
