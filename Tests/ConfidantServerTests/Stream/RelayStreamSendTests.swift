import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@Suite("Sending over the stream")
struct RelayStreamSendTests {
    @Test(
        "messages sent over the stream: receipts, order, idempotence, refusals, acknowledgements",
        arguments: TestDatabaseKind.allCases)
    func sendOverStream(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            let aliceStream = try await Self.connect(relay, alice)
            let bobStream = try await Self.connect(relay, bob)
            let toBob = [(bob.address, bob.identity.publicIdentity)]

            // 50 sends without waiting for each other: 50 receipts, delivered in the order sent.
            let batches = try (0..<50).map { try alice.batch("m \($0)", to: toBob) }
            for batch in batches { try await aliceStream.send(batch) }
            let receipts = await aliceStream.frames.next(50).compactMap(\.receipt)
            #expect(receipts.count == 50)
            #expect(Set(receipts.map(\.messageId)) == Set(batches.map(\.messageId)))
            #expect(receipts.allSatisfy { $0.stored == 1 && !$0.duplicate })
            let delivered = await bobStream.frames.next(50).compactMap(\.entry)
            #expect(try delivered.map { try bob.read($0, from: alice) } == (0..<50).map { "m \($0)" })
            #expect(zip(delivered, delivered.dropFirst()).allSatisfy { $0.cursor < $1.cursor })
            // Entries handed to the stream as they were stored read the same as from the mailbox.
            let stored = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 500)).ok.body.json.entries
            #expect(stored.count == delivered.count)
            for (read, pushed) in zip(stored, delivered) where read != pushed {
                Issue.record(
                    "cursor \(read.cursor): read back \(read.receivedAt.timeIntervalSince1970) \(read.senderUserId) \(read.messageId ?? "-"), pushed \(pushed.receivedAt.timeIntervalSince1970) \(pushed.senderUserId) \(pushed.messageId ?? "-") same envelope: \(read.envelope == pushed.envelope)"
                )
                break
            }

            // A retry is a duplicate with the first receipt's time, over the stream and over HTTP, and delivers nothing.
            try await aliceStream.send(batches[3])
            let retry = try #require(await aliceStream.frames.next(1).first?.receipt)
            let first = try #require(receipts.first { $0.messageId == batches[3].messageId })
            #expect(retry.duplicate && retry.stored == 1 && retry.receivedAt == first.receivedAt)
            let overHTTP = try await alice.client.sendMessage(body: .json(batches[3])).ok.body.json
            #expect(overHTTP.duplicate && overHTTP.receivedAt == first.receivedAt)

            // Refusals name the message they refuse and say why.
            var otherID = try alice.batch("other id", to: toBob)
            otherID.messageId = UUID().uuidString
            let (forged, unknownDevice) = try Self.refusable(alice, bob)
            var notAUUID = try alice.batch("bad id", to: toBob)
            notAUUID.messageId = "not a uuid"
            for batch in [otherID, forged, unknownDevice, notAUUID] { try await aliceStream.send(batch) }
            let refusals = Dictionary(
                await aliceStream.frames.next(4).compactMap(\.refused).map { ($0.messageId, $0.error) },
                uniquingKeysWith: { $1 })
            #expect(
                refusals == [
                    otherID.messageId: "envelope_mismatch", forged.messageId: "sender_mismatch",
                    unknownDevice.messageId: "device_mismatch", "not a uuid": "malformed_request",
                ])
            try await aliceStream.send(try alice.batch("last", to: toBob))
            #expect(await aliceStream.frames.next(1).first?.receipt?.duplicate == false)
            let next = try #require(await bobStream.frames.next(1).first?.entry)
            #expect(try bob.read(next, from: alice) == "last")

            // Acknowledgements over the stream delete the device's own entries only.
            let cursors = (delivered + [next]).map(\.cursor)
            let carolStream = try await Self.connect(relay, carol)
            try await carolStream.acknowledge(cursors)
            try await bobStream.acknowledge(Array(cursors.prefix(10)))
            let remaining = try await Self.eventually {
                try await bob.client.fetchMailbox(query: .init(after: 0, limit: 500)).ok.body.json.entries.map(\.cursor)
            } until: {
                $0.count == 41
            }
            #expect(remaining == Array(cursors.dropFirst(10)))
            for stream in [aliceStream, bobStream, carolStream] { await stream.close() }
        }
    }

    @Test(
        "ordered sends (version 2): stored only after the message they name; a refused one stops those that follow it",
        arguments: TestDatabaseKind.allCases)
    func orderedSends(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            let aliceStream = try await Self.connect(relay, alice)
            let bobStream = try await Self.connect(relay, bob)
            func id(_ batch: Components.Schemas.MessageBatch) throws -> UUID {
                try #require(UUID(uuidString: batch.messageId))
            }
            func answers(_ count: Int) async -> [String: String] {
                Dictionary(
                    await aliceStream.frames.next(count).compactMap { frame in
                        frame.receipt.map { ($0.messageId, $0.duplicate ? "duplicate" : "stored") }
                            ?? frame.refused.map { ($0.messageId, $0.error) }
                    }, uniquingKeysWith: { $1 })
            }

            // Back to back, without waiting: the second names the first and is stored after it,
            // whether the two land in one group or two.
            let first = try alice.batch("first", to: toBob)
            let second = try alice.batch("second", to: toBob)
            try await aliceStream.sendBinary(first)
            try await aliceStream.sendBinary(second, after: try id(first))
            #expect(
                await answers(2) == [first.messageId.lowercased(): "stored", second.messageId.lowercased(): "stored"])

            // A refused message stops the chain behind it; a message never sent stops one too.
            let (_, unknownDevice) = try Self.refusable(alice, bob)
            let behind = try alice.batch("behind the refused one", to: toBob)
            let further = try alice.batch("further behind", to: toBob)
            let orphan = try alice.batch("after a message never sent", to: toBob)
            try await aliceStream.sendBinary(unknownDevice)
            try await aliceStream.sendBinary(behind, after: try id(unknownDevice))
            try await aliceStream.sendBinary(further, after: try id(behind))
            try await aliceStream.sendBinary(orphan, after: UUID())
            #expect(
                await answers(4) == [
                    unknownDevice.messageId.lowercased(): "device_mismatch",
                    behind.messageId.lowercased(): "predecessor_missing",
                    further.messageId.lowercased(): "predecessor_missing",
                    orphan.messageId.lowercased(): "predecessor_missing",
                ])

            // Sent again once what it follows is stored, it goes; a retry is a duplicate, as ever.
            try await aliceStream.sendBinary(behind, after: try id(second))
            try await aliceStream.sendBinary(second, after: UUID())
            #expect(
                await answers(2) == [
                    behind.messageId.lowercased(): "stored", second.messageId.lowercased(): "duplicate",
                ])

            let delivered = await bobStream.frames.next(3).flatMap {
                ($0.entry.map { [$0] } ?? []) + ($0.entries ?? [])
            }
            #expect(
                try delivered.map { try bob.read($0, from: alice) } == ["first", "second", "behind the refused one"])
            let stored = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 500)).ok.body.json.entries
            #expect(stored.count == 3)
            for stream in [aliceStream, bobStream] { await stream.close() }
        }
    }

    @Test(
        "binary send frames: announced with the challenge, stored and delivered like JSON sends; refusals name the message; malformed frames are answered",
        arguments: TestDatabaseKind.allCases)
    func binarySends(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]

            // The challenge says which versions the relay takes; a binary frame is no proof.
            let unproven = try await StreamClient.connect(port: relay.port, user: alice, proving: false)
            let challenge = try #require(await unproven.frames.next(1).first)
            #expect(
                challenge.challenge != nil
                    && challenge.binarySendVersions == [
                        Int(StreamSendFrame.version), Int(StreamSendFrame.orderedVersion), Int(SharedSendFrame.version),
                    ])
            try await unproven.sendBinary(try alice.batch("before the proof", to: toBob))
            #expect(
                try await RevocationTests.closeCode(of: unproven) == .unknown(StreamCloseCode.proofRefused.rawValue))

            let aliceStream = try await Self.connect(relay, alice)
            let bobStream = try await Self.connect(relay, bob)
            let batches = try (0..<20).map { try alice.batch("b \($0)", to: toBob) }
            for batch in batches { try await aliceStream.sendBinary(batch) }
            let receipts = await aliceStream.frames.next(20).compactMap(\.receipt)
            #expect(Set(receipts.map(\.messageId)) == Set(batches.map { $0.messageId.lowercased() }))
            #expect(receipts.allSatisfy { $0.stored == 1 && !$0.duplicate })
            let delivered = await bobStream.frames.next(20).compactMap(\.entry)
            #expect(try delivered.map { try bob.read($0, from: alice) } == (0..<20).map { "b \($0)" })

            // A retry, in either form, is a duplicate and delivers nothing.
            try await aliceStream.sendBinary(batches[2])
            try await aliceStream.send(batches[3])
            #expect(await aliceStream.frames.next(2).compactMap(\.receipt).allSatisfy(\.duplicate))

            // Refusals carry the message id of the first envelope's header.
            let (forged, unknownDevice) = try Self.refusable(alice, bob)
            var mixed = try alice.batch("one message", to: toBob)
            let carol = try await TestUser.make(relay, name: "carol")
            mixed.envelopes += try alice.batch(
                "another message", to: [(carol.address, carol.identity.publicIdentity)]
            ).envelopes
            for batch in [forged, unknownDevice, mixed] { try await aliceStream.sendBinary(batch) }
            let refusals = Dictionary(
                await aliceStream.frames.next(3).compactMap(\.refused).map { ($0.messageId, $0.error) },
                uniquingKeysWith: { $1 })
            #expect(
                refusals == [
                    forged.messageId.lowercased(): "sender_mismatch",
                    unknownDevice.messageId.lowercased(): "device_mismatch",
                    mixed.messageId.lowercased(): "envelope_mismatch",
                ])

            // Frames that are not one encoding of a send frame are answered and change nothing.
            let good = try StreamSendFrame(
                envelopes: try alice.batch("never stored", to: toBob).envelopes.map { Data($0.envelope.data) }
            ).serialized()
            var unknownVersion = good
            unknownVersion[0] = 3
            for bytes in [good + [0], Data(good.dropLast()), unknownVersion, Data([1, 0, 0]), Data()] {
                try await aliceStream.sendBinary(bytes)
            }
            #expect(await aliceStream.problems.next(5) == Array(repeating: "malformed_request", count: 5))
            let stored = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 500)).ok.body.json.entries
            #expect(stored.count == 20)
            for stream in [aliceStream, bobStream] { await stream.close() }
        }
    }

    @Test(
        "JSON and binary sends interleaved on one connection are stored and delivered in the order they were sent",
        arguments: TestDatabaseKind.allCases)
    func interleavedForms(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            let aliceStream = try await Self.connect(relay, alice)
            let bobStream = try await Self.connect(relay, bob)
            // A binary send the event loop takes at once must not overtake JSON sends still
            // waiting in the stream's task (StreamFrameOrder); runs of each form make both happen.
            let count = 240
            let batches = try (0..<count).map { try alice.batch("m \($0)", to: toBob) }
            for (index, batch) in batches.enumerated() {
                if (index / 3) % 2 == 0 {
                    try await aliceStream.send(batch)
                } else {
                    try await aliceStream.sendBinary(batch)
                }
            }
            let receipts = await aliceStream.frames.next(count, within: 60).compactMap(\.receipt)
            #expect(receipts.count == count)
            let delivered = await bobStream.frames.next(count, within: 60).compactMap(\.entry)
            #expect(try delivered.map { try bob.read($0, from: alice) } == (0..<count).map { "m \($0)" })
            for stream in [aliceStream, bobStream] { await stream.close() }
        }
    }

    @Test(
        "batched=true: stored and new entries come several to a frame, in cursor order, each once; a bad value is refused",
        arguments: TestDatabaseKind.allCases)
    func batchedEntries(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            // Stored while bob is away: the replay puts them in one frame.
            for index in 0..<30 { _ = try await alice.send("stored \(index)", to: toBob) }
            let bobStream = try await StreamClient.connect(port: relay.port, user: bob, batched: true)
            var frames: [Components.Schemas.StreamFrame] = []
            while frames.last?.caughtUp != true {
                guard let frame = await bobStream.frames.next(1).first else { break }
                frames.append(frame)
            }
            #expect(frames.allSatisfy { $0.entry == nil })
            let stored = frames.flatMap { $0.entries ?? [] }
            #expect(frames.dropLast().count < 30)
            #expect(try stored.map { try bob.read($0, from: alice) } == (0..<30).map { "stored \($0)" })

            // Sent while bob listens: batched too (a frame per group or fewer), nothing twice.
            let aliceStream = try await Self.connect(relay, alice)
            let batches = try (0..<60).map { try alice.batch("live \($0)", to: toBob) }
            for batch in batches { try await aliceStream.sendBinary(batch) }
            #expect(await aliceStream.frames.next(60, within: 30).compactMap(\.receipt).count == 60)
            var live: [Components.Schemas.MailboxEntry] = []
            while live.count < 60, let frame = await bobStream.frames.next(1, within: 30).first {
                #expect(frame.entry == nil)
                live += frame.entries ?? []
            }
            #expect(live.count == 60)
            #expect(Set(live.map(\.cursor)).count == live.count)
            #expect(try live.map { try bob.read($0, from: alice) } == (0..<60).map { "live \($0)" })
            #expect(zip(stored + live, (stored + live).dropFirst()).allSatisfy { $0.cursor < $1.cursor })

            var request = HTTPClientRequest(url: relay.baseURL.absoluteString + "/v1/stream?after=0&batched=yes")
            request.headers.add(name: "Authorization", value: "Bearer \(bob.token)")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            #expect(response.status == .badRequest)
            for stream in [aliceStream, bobStream] { await stream.close() }
        }
    }

    @Test(
        "entries stored by different paths reach a stream in cursor order, each once",
        arguments: TestDatabaseKind.allCases)
    func orderAcrossPaths(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            // Now bob hears of carol's key changes.
            _ = try await carol.send("hello", to: [(bob.address, bob.identity.publicIdentity)])
            let bobStream = try await StreamClient.connect(port: relay.port, user: bob)
            let replay = await bobStream.frames.next(2)
            #expect(replay.compactMap(\.entry).count == 1 && replay.last?.caughtUp == true)
            let aliceStream = try await Self.connect(relay, alice)

            // Alice's sends (the writer's group commits) and carol's key changes (the sign-in's
            // own transaction) interleave; bob's stream must still see every cursor once, in order.
            let messages = 300
            let keyChanges = 3
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for index in 0..<messages {
                        try await aliceStream.send(
                            try alice.batch("n \(index)", to: [(bob.address, bob.identity.publicIdentity)]))
                    }
                    #expect(await aliceStream.frames.next(messages, within: 30).compactMap(\.receipt).count == messages)
                }
                group.addTask {
                    for _ in 0..<keyChanges {
                        _ = try await TestUser.signIn(
                            relay, id: carol.id, email: carol.email, password: carol.password,
                            identity: try PrivateIdentity.generate())
                    }
                }
                try await group.waitForAll()
            }
            let live = await bobStream.frames.next(messages + keyChanges, within: 30).compactMap(\.entry)
            #expect(live.count == messages + keyChanges)
            #expect(live.filter { $0.kind == .keyChange }.count == keyChanges)
            #expect(zip(live, live.dropFirst()).allSatisfy { $0.cursor < $1.cursor })
            let texts = try live.filter { $0.kind == .envelope }.map { try bob.read($0, from: alice) }
            #expect(texts == (0..<messages).map { "n \($0)" })
            let stored = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 500)).ok.body.json.entries
            #expect(stored.map(\.cursor) == (replay.compactMap(\.entry) + live).map(\.cursor))
            await bobStream.close()
            await aliceStream.close()
        }
    }

    @Test("SQLite: background checkpoints copy the write-ahead log into the database file as messages arrive")
    func checkpoints() async throws {
        try await TestRelay.run(.sqlite) { relay in
            guard case .sqlite(let path) = relay.database else { return }
            func size(_ path: String) -> Int {
                ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
            }
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let aliceStream = try await Self.connect(relay, alice)
            let before = size(path)
            let text = String(repeating: "x", count: 8_000)
            for _ in 0..<300 {
                try await aliceStream.send(try alice.batch(text, to: [(bob.address, bob.identity.publicIdentity)]))
            }
            #expect(await aliceStream.frames.next(300, within: 30).compactMap(\.receipt).count == 300)
            // About 2.5 MB of envelopes: the database file itself must take them in, not only the log.
            let after = try await Self.eventually {
                size(path)
            } until: {
                $0 > before + 2_000_000
            }
            #expect(
                after > before + 2_000_000, "database file \(before) → \(after) bytes, log \(size(path + "-wal")) bytes"
            )
            await aliceStream.close()
        }
    }

    /// Two messages from `alice` to `bob` the relay must refuse: one sealed as bob's
    /// (`sender_mismatch`), one to a device bob does not have (`device_mismatch`).
    static func refusable(_ alice: TestUser, _ bob: TestUser) throws -> (
        forged: Components.Schemas.MessageBatch, unknownDevice: Components.Schemas.MessageBatch
    ) {
        let forged = try bob.batch(
            "sent as bob by alice's device", to: [(alice.address, alice.identity.publicIdentity)])
        let ghost = try PrivateIdentity.generate()
        let unknownDevice = try alice.batch(
            "to a device bob does not have",
            to: [(DeviceAddress(userID: bob.id, deviceID: ghost.deviceID), ghost.publicIdentity)])
        return (forged, unknownDevice)
    }

    /// A stream for `user`, once it has said it caught up.
    static func connect(_ relay: some RelayEndpoint, _ user: TestUser) async throws -> StreamClient {
        let stream = try await StreamClient.connect(port: relay.port, user: user)
        #expect(await stream.frames.next(1).first?.caughtUp == true)
        return stream
    }

    /// `value()` once `done` holds, trying for up to ten seconds; the last value otherwise.
    static func eventually<T>(_ value: () async throws -> T, until done: (T) -> Bool) async throws -> T {
        var result = try await value()
        for _ in 0..<100 where !done(result) {
            try await Task.sleep(for: .milliseconds(100))
            result = try await value()
        }
        return result
    }
}
