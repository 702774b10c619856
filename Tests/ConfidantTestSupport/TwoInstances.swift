import Foundation

/// A throw-away database in the cluster `Tests/run.sh` started: made for `body`, dropped
/// afterwards (awaited), however `body` ends.
package enum ScratchDatabase {
    package static func run<T>(
        in cluster: String, prefix: String, isolation: isolated (any Actor)? = #isolation,
        _ body: (_ url: String) async throws -> T
    ) async throws -> T {
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        try await PostgresAdmin.run(url: cluster, "CREATE DATABASE \(name)")
        let drop = { try? await PostgresAdmin.run(url: cluster, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        do {
            let result = try await body(PostgresAdmin.url(cluster, database: name))
            await drop()
            return result
        } catch {
            await drop()
            throw error
        }
    }
}

/// Two `confidant serve` processes on one new PostgreSQL database, as a deployment of several
/// instances runs: `body` gets both relays; the processes are stopped and the database and data
/// directories removed afterwards, however `body` ends. The second starts once the first has
/// migrated the schema.
package enum TwoInstances {
    package static func run(
        in cluster: String, isolation: isolated (any Actor)? = #isolation,
        _ body: (_ first: ServedRelay, _ second: ServedRelay) async throws -> Void
    ) async throws {
        try await ScratchDatabase.run(in: cluster, prefix: "confidant_instances") { url in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-two-\(UUID())")
            let first = try ServeProcess(dataDirectory: directory.appendingPathComponent("a"), database: url)
            var second: ServeProcess?
            defer {
                first.kill(SIGTERM)
                second?.kill(SIGTERM)
                _ = first.waitForExit()
                _ = second?.waitForExit()
                try? FileManager.default.removeItem(at: directory)
            }
            let relayA = try await first.relay()
            let process = try ServeProcess(dataDirectory: directory.appendingPathComponent("b"), database: url)
            second = process
            try await body(relayA, try await process.relay())
        }
    }
}
