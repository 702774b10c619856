import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import Foundation
import Logging
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime
import PostgresNIO
import Testing

/// Which database a test's relay uses. PostgreSQL runs when `Tests/run.sh` started a cluster and
/// exported `CONFIDANT_TEST_POSTGRES_URL`; each test then gets its own fresh database in it, and
/// without one a PostgreSQL case ends as skipped (`Prerequisite`), never as a pass on SQLite.
package enum TestDatabaseKind: String, CaseIterable, Sendable {
    case sqlite, postgres

    package static var postgresURL: String? { ProcessInfo.processInfo.environment["CONFIDANT_TEST_POSTGRES_URL"] }
}

/// Somewhere a relay listens on loopback.
package protocol RelayEndpoint: Sendable {
    var port: Int { get }
    /// Where the relay keeps its files (and its development outbox of e-mail codes).
    var dataDirectory: URL { get }
}

extension RelayEndpoint {
    package var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A generated API client, signed in with `token` when given.
    package func client(token: String? = nil) -> Client {
        Client(
            serverURL: baseURL.appendingPathComponent("v1"), configuration: APIConfiguration.default,
            transport: AsyncHTTPClientTransport(), middlewares: token.map { [BearerTokenMiddleware(token: $0)] } ?? [])
    }

    /// Runs `body` with an unauthenticated client of its own that opens up to `connections`
    /// connections at once, for tests whose point is many requests arriving together: the shared
    /// client opens 8 per host and queues the rest, and a request's deadline runs while it
    /// queues. The deadline is 5 minutes, so only a hang fails, not a busy machine.
    package func withParallelClient<T: Sendable>(
        connections: Int, isolation: isolated (any Actor)? = #isolation, _ body: (Client) async throws -> T
    ) async throws -> T {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let client = Client(
            serverURL: baseURL.appendingPathComponent("v1"), configuration: APIConfiguration.default,
            transport: AsyncHTTPClientTransport(configuration: .init(client: http, timeout: .minutes(5))))
        do {
            let result = try await body(client)
            try await http.shutdown()
            return result
        } catch {
            try? await http.shutdown()
            throw error
        }
    }
}

/// A relay on a free loopback port with its own temporary data directory (and database).
package struct TestRelay: RelayEndpoint {
    package let server: RelayServer
    package let port: Int
    package let directory: URL
    package let database: DatabaseLocation
    package let postgresName: String?
    package var dataDirectory: URL { directory }

    package static func start(
        _ kind: TestDatabaseKind = .sqlite, isolation: isolated (any Actor)? = #isolation, shipped: Bool = false,
        directory: URL? = nil, adjust: (inout ServerConfiguration) -> Void = { _ in },
        logger: Logger = Logger(label: "confidant.relay")
    ) async throws -> TestRelay {
        let directory =
            directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("confidant-relay-\(UUID())")
        var configuration = ServerConfiguration.embedded(dataDirectory: directory)
        var postgresName: String?
        if kind == .postgres {
            let url = try Prerequisite.postgresCluster()
            let name = "confidant_test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
            try await PostgresAdmin.run(url: url, "CREATE DATABASE \(name)")
            postgresName = name
            configuration.database = .postgres(url: PostgresAdmin.url(url, database: name))
        }
        configuration.port = 0
        configuration.useTestingSecurityParameters()
        // `shipped`: every limit as `confidant serve` has it (for the tests that pin them).
        if !shipped {
            configuration.freeSignUpsPerAddress = 1_000_000
            configuration.signInStarts.perAddress.limit = 1_000_000
            // The whole suite runs at once on two cores: a request there can wait far longer for
            // a database connection or a PostgreSQL answer than the production defaults (10 s,
            // 20 s) allow, and a 503 would fail a test about something else. Only a hang fails
            // here; the tests of these limits set their own.
            configuration.databaseWaitSeconds = 120
            configuration.postgresWriteSeconds = 120
            configuration.postgresConnectSeconds = 120
        }
        adjust(&configuration)
        let server = try await RelayServer(configuration: configuration, logger: logger)
        let port = try await server.start()
        return TestRelay(
            server: server, port: port, directory: directory, database: configuration.database,
            postgresName: postgresName)
    }

    /// Starts a relay, runs `body` with it, and stops it (removing its files) however `body` ends.
    package static func run(
        _ kind: TestDatabaseKind = .sqlite, isolation: isolated (any Actor)? = #isolation, shipped: Bool = false,
        adjust: (inout ServerConfiguration) -> Void = { _ in }, logger: Logger = Logger(label: "confidant.relay"),
        _ body: (TestRelay) async throws -> Void
    ) async throws {
        let relay = try await start(kind, shipped: shipped, adjust: adjust, logger: logger)
        do {
            try await body(relay)
        } catch {
            await relay.stop()
            throw error
        }
        await relay.stop()
    }

    package func stop() async {
        await server.shutdown()
        try? FileManager.default.removeItem(at: directory)
        if let postgresName, let url = TestDatabaseKind.postgresURL {
            try? await PostgresAdmin.run(url: url, "DROP DATABASE IF EXISTS \(postgresName) WITH (FORCE)")
        }
    }

}

/// Creates and drops per-test databases in the cluster `Tests/run.sh` started.
package enum PostgresAdmin {
    package static func url(_ base: String, database: String) -> String {
        guard var components = URLComponents(string: base) else { return base }
        components.path = "/\(database)"
        return components.string ?? base
    }

    /// How to connect to the cluster's `postgres` database.
    package static func configuration(url: String) -> PostgresConnection.Configuration? {
        guard let components = URLComponents(string: url), let host = components.host else { return nil }
        var configuration = PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: "postgres", tls: .disable)
        // The whole suite shares one cluster on two cores: a start-up can take longer than 10 s.
        configuration.options.connectTimeout = .seconds(120)
        return configuration
    }

    /// The integer the first column of `query`'s first row holds, in `database`.
    package static func integer(url: String, database: String, _ query: String) async throws -> Int {
        guard var configuration = configuration(url: url) else { return 0 }
        configuration.database = database
        let connection = try await PostgresConnection.connect(
            configuration: configuration, id: 1, logger: .init(label: "test.pg"))
        do {
            let rows = try await connection.query(PostgresQuery(unsafeSQL: query), logger: .init(label: "test.pg"))
            var value = 0
            for try await row in rows.decode(Int.self) { value = row }
            try await connection.close()
            return value
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// Runs `statement` in `database` (the cluster's `postgres` database by default).
    package static func run(url: String, database: String? = nil, _ statement: String) async throws {
        guard var configuration = configuration(url: url) else { return }
        if let database { configuration.database = database }
        let connection = try await PostgresConnection.connect(
            configuration: configuration, id: 1, logger: .init(label: "test.pg"))
        do {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: .init(label: "test.pg"))
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}
