import ConfidantAPI
import ConfidantCrypto
import ConfidantServer
import ConfidantTestSupport
import Foundation
import Synchronization
import Testing

@Suite("Relay as processes and instances")
struct RelayProcessTests {
    @Test(
        "two confidant serve processes on one PostgreSQL deliver to each other's streams")
    func fanOutAcrossInstances() async throws {
        let cluster = try Prerequisite.postgresCluster()
        try await TwoInstances.run(in: cluster) { relayA, relayB in
            let alice = try await TestUser.make(relayA, name: "alice")
            let bob = try await TestUser.make(relayB, name: "bob")
            let stream = try await StreamClient.connect(port: relayB.port, user: bob)
            #expect(await stream.frames.next(1).first?.caughtUp == true)
            for index in 0..<10 {
                _ = try await alice.send("across \(index)", to: [(bob.address, bob.identity.publicIdentity)])
            }
            #expect(await stream.frames.next(10).compactMap(\.entry).count == 10)

            // Both instances write to Bob's device at once: B hands its own rows to Bob's stream
            // (`MailboxHandOver`) only when the stream has what came before them, and A's come by
            // NOTIFY and a read. Every message arrives once, in cursor order.
            let carol = try await TestUser.make(relayB, name: "carol")
            let ids = try await withThrowingTaskGroup(of: [UUID].self) { group in
                for sender in [alice, carol] {
                    group.addTask {
                        var ids: [UUID] = []
                        for index in 0..<20 {
                            let id = UUID()
                            _ = try await sender.send(
                                "both \(index)", to: [(bob.address, bob.identity.publicIdentity)], messageID: id)
                            ids.append(id)
                        }
                        return ids
                    }
                }
                return try await group.reduce(into: [UUID]()) { $0 += $1 }
            }
            let entries = await stream.frames.next(40).compactMap(\.entry)
            #expect(entries.count == 40)
            #expect(Set(entries.compactMap(\.messageId)) == Set(ids.map(\.canonicalString)))
            #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.cursor < $1.cursor })
            await stream.close()
        }
    }

    @Test(
        "confidant serve: starts on a free port, survives SIGKILL without losing or duplicating an acknowledged message, stops on SIGTERM"
    )
    func killAndRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-serve-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        var server = try ServeProcess(dataDirectory: directory)
        var relay = try await server.relay()
        let alice = try await TestUser.make(relay, name: "alice")
        let bob = try await TestUser.make(relay, name: "bob")

        // Alice sends as fast as the server acknowledges; the server is killed mid-stream, once
        // at least 20 sends are acknowledged (however long that takes on a loaded machine).
        let progress = AcknowledgedCount()
        let sender = Task { () -> [UUID] in
            var acknowledged: [UUID] = []
            for index in 0..<10_000 {
                let id = UUID()
                do {
                    _ = try await alice.send(
                        "message \(index)", to: [(bob.address, bob.identity.publicIdentity)], messageID: id)
                    acknowledged.append(id)
                    progress.set(acknowledged.count)
                } catch {
                    return acknowledged
                }
            }
            return acknowledged
        }
        for _ in 0..<600 where progress.value < 20 { try await Task.sleep(for: .milliseconds(100)) }
        try await Task.sleep(for: .milliseconds(200))
        server.kill(SIGKILL)
        let acknowledged = await sender.value
        #expect(acknowledged.count >= 20)
        #expect(acknowledged.count < 10_000)

        server = try ServeProcess(dataDirectory: directory)
        relay = try await server.relay()
        let bobAgain = TestUser(
            id: bob.id, email: bob.email, password: bob.password, identity: bob.identity, token: bob.token,
            client: relay.client(token: bob.token))
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
        #expect(Set(acknowledged.map { $0.canonicalString }).isSubset(of: Set(stored)))
        #expect(stored.count <= acknowledged.count + 1)
        server.kill(SIGTERM)
        #expect(server.waitForExit() == 0)
    }
}

/// How many sends the relay has acknowledged so far, shared with the task that sends them.
private final class AcknowledgedCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func set(_ value: Int) { count.withLock { $0 = value } }
}

@Suite("The production server")
struct ProductionServeTests {
    @Test("confidant serve hashes passwords at bcrypt cost 12 whatever its environment says")
    func noWeakHashingSwitch() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-serve-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        // The switch earlier versions honoured, set as a test harness would.
        let served = try ServeProcess(
            dataDirectory: directory, confidantServe: true, environment: ["CONFIDANT_TESTING_FAST_HASHES": "1"])
        defer {
            served.kill(SIGTERM)
            _ = served.waitForExit()
        }
        let relay = try await served.relay()
        _ = try await relay.client().signUp(
            body: .json(.init(email: "cost@example.com", password: "a long enough password", displayName: "Cost"))
        ).created
        let database =
            try Data(contentsOf: directory.appendingPathComponent("relay.sqlite"))
            + ((try? Data(contentsOf: directory.appendingPathComponent("relay.sqlite-wal"))) ?? Data())
        #expect(database.range(of: Data("$2b$12$".utf8)) != nil, "the stored hash has cost 12")
        #expect(database.range(of: Data("$2b$04$".utf8)) == nil)
    }
}
