import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import Foundation
import Testing

@Suite("Relay as processes and instances")
struct RelayProcessTests {
    @Test("two confidant serve processes on one PostgreSQL deliver to each other's streams", .enabled(if: TestDatabaseKind.postgresURL != nil))
    func fanOutAcrossInstances() async throws {
        guard let cluster = TestDatabaseKind.postgresURL else { return }
        let name = "confidant_fanout_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        try await PostgresAdmin.run(url: cluster, "CREATE DATABASE \(name)")
        let url = PostgresAdmin.url(cluster, database: name)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-fanout-\(UUID())")
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
        // The second instance starts after the first has migrated the schema.
        let secondProcess = try ServeProcess(dataDirectory: directory.appendingPathComponent("b"), database: url)
        second = secondProcess
        let relayB = try await secondProcess.relay()
        let alice = try await TestUser.make(relayA, name: "alice")
        let bob = try await TestUser.make(relayB, name: "bob")
        let stream = try await StreamClient.connect(port: relayB.port, token: bob.token)
        #expect(await stream.frames.next(1).first?.caughtUp == true)
        for index in 0..<10 { _ = try await alice.send("across \(index)", to: [(bob.address, bob.identity.publicIdentity)]) }
        #expect(await stream.frames.next(10).compactMap(\.entry).count == 10)
        await stream.close()
    }

    @Test("confidant serve: starts on a free port, survives SIGKILL without losing or duplicating an acknowledged message, stops on SIGTERM")
    func killAndRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-serve-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        var server = try ServeProcess(dataDirectory: directory)
        var relay = try await server.relay()
        let alice = try await TestUser.make(relay, name: "alice")
        let bob = try await TestUser.make(relay, name: "bob")

        // Alice sends as fast as the server acknowledges; the server is killed mid-stream.
        let sender = Task { () -> [UUID] in
            var acknowledged: [UUID] = []
            for index in 0..<10_000 {
                let id = UUID()
                do {
                    _ = try await alice.send("message \(index)", to: [(bob.address, bob.identity.publicIdentity)], messageID: id)
                    acknowledged.append(id)
                } catch {
                    return acknowledged
                }
            }
            return acknowledged
        }
        try await Task.sleep(for: .milliseconds(1500))
        server.kill(SIGKILL)
        let acknowledged = await sender.value
        #expect(acknowledged.count > 10)

        server = try ServeProcess(dataDirectory: directory)
        relay = try await server.relay()
        let bobAgain = TestUser(id: bob.id, email: bob.email, password: bob.password, identity: bob.identity, token: bob.token, client: relay.client(token: bob.token))
        var stored: [String] = []
        var after: Int64 = 0
        while true {
            let page = try await bobAgain.client.fetchMailbox(query: .init(after: after, limit: 500)).ok.body.json
            stored += page.entries.compactMap(\.messageId)
            after = page.entries.last?.cursor ?? after
            if !page.hasMore { break }
        }
        // Every acknowledged message is there, and nothing is there twice.
        #expect(Set(stored).count == stored.count)
        #expect(Set(acknowledged.map { $0.uuidString.lowercased() }).isSubset(of: Set(stored)))
        #expect(stored.count <= acknowledged.count + 1)
        server.kill(SIGTERM)
        #expect(server.waitForExit() == 0)
    }
}

/// `confidant serve --port 0` as a child process.
struct ServeProcess {
    let process = Process()
    let output = Pipe()
    let dataDirectory: URL

    init(dataDirectory: URL, database: String? = nil) throws {
        self.dataDirectory = dataDirectory
        process.executableURL = try CLIExecutable.url
        process.arguments = ["serve", "--port", "0", "--data-dir", dataDirectory.path, "--log-level", "error"]
            + (database.map { ["--database", $0] } ?? [])
        var environment = ProcessInfo.processInfo.environment
        environment["CONFIDANT_TESTING_FAST_HASHES"] = "1"
        process.environment = environment
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Waits for the "listening on" line and returns a handle on the served relay.
    func relay() async throws -> ServedRelay {
        var line = Data()
        let handle = output.fileHandleForReading
        while !line.contains(UInt8(ascii: "\n")) {
            let byte = handle.readData(ofLength: 1)
            guard !byte.isEmpty else { throw CocoaError(.fileReadUnknown) }
            line += byte
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "127.0.0.1:"), let port = Int(text[range.upperBound...].prefix(while: \.isNumber)) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        return ServedRelay(port: port)
    }

    func kill(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

    func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// The parts of `TestRelay` that `TestUser` needs, for a relay in another process.
struct ServedRelay: RelayEndpoint {
    let port: Int
}

enum CLIExecutable {
    static var url: URL {
        get throws {
            let candidates = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
                + Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
            for directory in candidates {
                let url = directory.appendingPathComponent("confidant")
                if FileManager.default.isExecutableFile(atPath: url.path) { return url }
            }
            throw CocoaError(.fileNoSuchFile)
        }
    }
}
