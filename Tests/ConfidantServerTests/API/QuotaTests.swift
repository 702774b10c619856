import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import OpenAPIRuntime
import Testing

@testable import ConfidantServer

extension Operations.PutBackupObject.Output: ProblemOutput {}

/// What one account can make the relay store or carry: storage, mailboxes, the rate of sends.
@Suite("Quotas and rates")
struct QuotaTests {
    @Test(
        "blobs and backup objects share the account's storage quota; deleting frees it",
        arguments: TestDatabaseKind.allCases)
    func storageQuota(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.storageQuotaBytes = 100_000 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let sixty = HTTPBody([UInt8](repeating: 7, count: 60_000))
            let first = try await alice.client.uploadBlob(body: .binary(sixty)).created.body.json
            #expect(
                try await alice.client.uploadBlob(body: .binary(HTTPBody([UInt8](repeating: 7, count: 60_000)))).problem
                    == "quota_exceeded 413")
            #expect(
                try await alice.client.putBackupObject(
                    path: .init(name: "manifest"),
                    body: .binary(HTTPBody([UInt8](repeating: 1, count: 50_000)))
                ).problem
                    == "quota_exceeded 413")
            // Another account is not affected; replacing an object needs only the difference.
            _ = try await bob.client.uploadBlob(body: .binary(HTTPBody([UInt8](repeating: 7, count: 60_000)))).created
            _ = try await alice.client.putBackupObject(
                path: .init(name: "manifest"), body: .binary(HTTPBody([1, 2, 3]))
            ).ok
            _ = try await alice.client.putBackupObject(
                path: .init(name: "manifest"),
                body: .binary(HTTPBody([UInt8](repeating: 1, count: 30_000)))
            ).ok
            _ = try await alice.client.deleteBlob(path: .init(blobId: first.blobId)).noContent
            _ = try await alice.client.uploadBlob(body: .binary(HTTPBody([UInt8](repeating: 7, count: 60_000)))).created
            #expect(
                try FileManager.default.contentsOfDirectory(
                    atPath: relay.directory.appendingPathComponent("blobs").path
                )
                .filter { $0.hasSuffix(".partial") }.isEmpty, "refused uploads leave nothing behind")
        }
    }

    @Test(
        "uploads that finish together cannot pass the quota between them: exactly as many are stored as fit",
        arguments: TestDatabaseKind.allCases)
    func parallelUploadsStayWithinTheQuota(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.storageQuotaBytes = 100_000 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            // As many at once as an account may run: three of 30,000 bytes fit in 100,000.
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<UploadReservations.maximumPerAccount {
                    let client = alice.client
                    group.addTask {
                        let body = HTTPBody([UInt8](repeating: UInt8(index), count: 30_000))
                        if index.isMultiple(of: 2) {
                            let answer = try await client.uploadBlob(body: .binary(body))
                            if case .created = answer { return true }
                            let problem = try answer.problem
                            #expect(problem == "quota_exceeded 413", "\(answer)")
                            return false
                        }
                        let answer = try await client.putBackupObject(
                            path: .init(name: "object-\(index)"), body: .binary(body))
                        if case .ok = answer { return true }
                        let problem = try answer.problem
                        #expect(problem == "quota_exceeded 413", "\(answer)")
                        return false
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 3, "three of 30,000 bytes fit in 100,000")
        }
    }

    @Test("parallel uploads cannot take the disk below the free-space floor between them")
    func parallelUploadsKeepTheFloor() async throws {
        let megabyte = 1 << 20
        // A disk of 60 MiB that blobs alone fill, with 30 MiB to stay free: room for one upload of
        // 20 MiB, not two. (A disk of its own: the suite's other tests write and free the real one.)
        let disk = Int64(60 * megabyte)
        try await TestRelay.run(adjust: {
            $0.minimumFreeBytes = Int64(30 * megabyte)
            $0.freeSpace = { directory in
                let files =
                    (try? FileManager.default.contentsOfDirectory(
                        at: directory, includingPropertiesForKeys: [.fileSizeKey])) ?? []
                return disk
                    - files.reduce(Int64(0)) {
                        $0 + Int64((try? $1.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
                    }
            }
        }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let stored = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (index, user) in [alice, alice, bob].enumerated() {
                    let client = user.client
                    group.addTask {
                        let body = HTTPBody([UInt8](repeating: UInt8(index), count: 20 * megabyte))
                        let answer = try await client.uploadBlob(body: .binary(body))
                        if case .created = answer { return true }
                        #expect(try answer.problem == "storage_unavailable 503")
                        return false
                    }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(stored == 1, "\(stored) uploads of 20 MiB went into 30 MiB of headroom")
        }
    }

    @Test("an account runs at most four uploads at once on an instance; others are not held up by it")
    func uploadsPerAccount() throws {
        let reservations = UploadReservations()
        let space = DiskSpace(directory: FileManager.default.temporaryDirectory, floor: 0)
        let (alice, bob) = (UUID(), UUID())
        let running = (0..<UploadReservations.maximumPerAccount).map { _ in UUID() }
        for id in running { try reservations.begin(id, owner: alice, declared: 1, space: space) }
        #expect(throws: APIFailure.self) { try reservations.begin(UUID(), owner: alice, declared: 1, space: space) }
        try reservations.begin(UUID(), owner: bob, declared: 1, space: space)
        reservations.end(running[0])
        try reservations.begin(UUID(), owner: alice, declared: 1, space: space)
        #expect(reservations.count == UploadReservations.maximumPerAccount + 1)
    }

    /// Sends the recipient's mailbox full (the relay's limit set to 3) and checks that one more is
    /// refused; returns the recipient's addressing.
    private static func fillMailbox(of bob: TestUser, from alice: TestUser) async throws -> [(
        DeviceAddress, PublicIdentity
    )] {
        let toBob = [(bob.address, bob.identity.publicIdentity)]
        for index in 0..<3 { _ = try await alice.send("fills \(index)", to: toBob) }
        let refused = try await alice.client.sendMessage(body: .json(alice.batch("one too many", to: toBob)))
        #expect(try refused.problem == "quota_exceeded 413")
        return toBob
    }

    @Test(
        "a device's mailbox holds a bounded number of unread messages; reading makes room",
        arguments: TestDatabaseKind.allCases)
    func mailboxLimit(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind, adjust: { $0.mailboxLimit = 3 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = try await Self.fillMailbox(of: bob, from: alice)
            let page = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 10)).ok.body.json
            _ = try await bob.client.acknowledge(body: .json(.init(cursors: page.entries.map(\.cursor)))).ok
            _ = try await alice.send("room again", to: toBob)
        }
    }

    @Test(
        "a full mailbox that maintenance emptied takes messages again at once (the relay counts a device's entries again after another connection deleted them)",
        arguments: TestDatabaseKind.allCases)
    func mailboxLimitAfterRetention(kind: TestDatabaseKind) async throws {
        let clock = ManualClock()
        try await TestRelay.run(
            kind,
            adjust: {
                $0.now = clock.now
                $0.mailboxLimit = 3
                $0.mailboxRetention = 30 * 86_400
                $0.sessionLifetime = 90 * 86_400
            }
        ) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = try await Self.fillMailbox(of: bob, from: alice)
            clock.advance(by: 31 * 86_400)
            try await relay.server.runMaintenance()
            _ = try await alice.send("room again", to: toBob)
            let entries = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 10)).ok.body.json.entries
            #expect(entries.count == 1)
        }
    }

    @Test(
        "unread mailbox entries past the retention are deleted by maintenance, and the record of their message ids with them"
    )
    func mailboxRetention() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            $0.mailboxRetention = 30 * 86_400
            $0.sessionLifetime = 90 * 86_400
        }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            let old = try alice.batch("old", to: toBob)
            #expect(try await alice.client.sendMessage(body: .json(old)).ok.body.json.duplicate == false)
            clock.advance(by: 29 * 86_400)
            let recent = try alice.batch("recent", to: toBob)
            #expect(try await alice.client.sendMessage(body: .json(recent)).ok.body.json.duplicate == false)
            clock.advance(by: 2 * 86_400)
            try await relay.server.runMaintenance()
            let entries = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 10)).ok.body.json.entries
            #expect(entries.count == 1)
            // Idempotence is kept as long as the mailbox keeps messages: the recent retry is still
            // answered as a duplicate; the old one's record went with it, so its retry is new.
            #expect(try await alice.client.sendMessage(body: .json(recent)).ok.body.json.duplicate == true)
            #expect(try await alice.client.sendMessage(body: .json(old)).ok.body.json.duplicate == false)
        }
    }

    @Test("sends are rate-limited per account, over HTTP and the stream alike; the bucket refills")
    func sendRate() async throws {
        let clock = ManualClock()
        try await TestRelay.run(adjust: {
            $0.now = clock.now
            $0.sendRate = .init(burst: 3, perSecond: 1)
        }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            for index in 0..<3 { _ = try await alice.send("burst \(index)", to: toBob) }
            let refused = try await alice.client.sendMessage(body: .json(alice.batch("fourth", to: toBob)))
            #expect(try refused.problem == "rate_limited 429")
            // Over the stream too.
            let stream = try await StreamClient.connect(port: relay.port, user: alice)
            #expect(await stream.frames.next(1).first?.caughtUp == true)
            let batch = try alice.batch("streamed", to: toBob)
            try await stream.send(batch)
            let answer = try #require(await stream.frames.next(1).first)
            #expect(answer.refused?.error == "rate_limited")
            await stream.close()
            // A second later there is one more token.
            clock.advance(by: 1)
            _ = try await alice.send("after a second", to: toBob)
            // Bob is not limited by Alice's sending.
            _ = try await bob.send("bob's own", to: [(alice.address, alice.identity.publicIdentity)])
        }
    }
}
