import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantServer

/// Binary delivery frames (docs/PROTOCOL.md §7.3): known answers, one encoding per frame, a second
/// reader in Python (`Tests/Interop/stream_delivery_frame.py`) written from the document, and the
/// relay's streams sending them in their place among the text frames.
@Suite("Binary delivery frames")
struct StreamDeliveryFrameTests {
    private static func hex(_ bytes: some Sequence<UInt8>) -> String { Hex.string(bytes) }
    private static func bytes(_ hex: String) -> Data { Hex.bytes(hex) }

    private static let user = UUID(uuidString: "00112233-4455-6677-8899-aabbccddeeff") ?? UUID()
    private static let device = UUID(uuidString: "ffeeddcc-bbaa-9988-7766-554433221100") ?? UUID()
    private static let message = UUID(uuidString: "0192f1a0-0000-7000-8000-000000000001") ?? UUID()

    private static func entry(_ cursor: Int64, _ envelope: Data, at milliseconds: Int64 = 1_764_000_000_123) throws
        -> StreamDeliveryFrame.Entry
    {
        try StreamDeliveryFrame.Entry(
            cursor: cursor, receivedAtMilliseconds: milliseconds, sender: DeviceAddress(userID: user, deviceID: device),
            messageID: message, envelope: envelope)
    }

    /// The known answer's entry, field by field.
    private static let entryHex =
        "0000000000000007" + "0000019ab697e87b" + "00112233445566778899aabbccddeeff"
        + "ffeeddccbbaa99887766554433221100" + "0192f1a0000070008000000000000001" + "00000003" + "010203"

    @Test("known answer and round trip, and the JSON entry it stands for")
    func knownAnswer() throws {
        let frame = try StreamDeliveryFrame(entries: [try Self.entry(7, Data([1, 2, 3]))])
        #expect(Self.hex(frame.serialized()) == "01" + "0001" + Self.entryHex)
        #expect(try StreamDeliveryFrame(serialized: frame.serialized()) == frame)
        // Read from the middle of a larger buffer, the same.
        #expect(try StreamDeliveryFrame(serialized: (Data([9, 9]) + frame.serialized()).dropFirst(2)) == frame)
        let many = try StreamDeliveryFrame(
            entries: (1...256).map {
                try Self.entry(Int64($0) * 1_000_003, Data(repeating: UInt8($0 % 256), count: $0 * 7))
            })
        #expect(try StreamDeliveryFrame(serialized: many.serialized()) == many)
        let negative = try StreamDeliveryFrame(entries: [try Self.entry(Int64.max, Data([1]), at: -1)])
        #expect(try StreamDeliveryFrame(serialized: negative.serialized()).entries[0].receivedAtMilliseconds == -1)

        let json = frame.entries[0].mailboxEntry
        #expect(json.cursor == 7 && json.kind == .envelope)
        #expect(json.senderUserId == "00112233-4455-6677-8899-aabbccddeeff")
        #expect(json.senderDeviceId == "ffeeddcc-bbaa-9988-7766-554433221100")
        #expect(json.messageId == "0192f1a0-0000-7000-8000-000000000001")
        #expect(json.envelope?.data == [1, 2, 3])
        #expect(StreamDeliveryForm.milliseconds(json.receivedAt) == 1_764_000_000_123)
    }

    /// Every way bytes can fail to be exactly one frame, and why.
    static let malformed: [(hex: String, error: StreamDeliveryFrameError)] = [
        ("", .truncated),
        ("01", .truncated),
        ("0100", .truncated),
        ("02" + "0001" + entryHex, .unsupportedVersion(2)),
        ("010000", .entryCount(0)),
        ("010101", .entryCount(257)),
        ("010001" + String(entryHex.dropLast(2)), .truncated),
        ("010001" + String(entryHex.prefix(60)), .truncated),
        ("010001" + entryHex + "00", .trailingBytes(1)),
        ("010001" + "0000000000000000" + entryHex.dropFirst(16), .invalidCursor),
        ("010001" + "8000000000000000" + entryHex.dropFirst(16), .invalidCursor),
        ("010001" + entryHex.prefix(128) + "00000000", .emptyEnvelope),
        ("010002" + entryHex + entryHex, .cursorOrder),
    ]

    @Test("malformed frames are refused with their reason")
    func malformedFrames() throws {
        for (hex, expected) in Self.malformed {
            #expect(throws: expected, "\(hex)") { try StreamDeliveryFrame(serialized: Self.bytes(hex)) }
        }
        #expect(throws: StreamDeliveryFrameError.entryCount(0)) { try StreamDeliveryFrame(entries: []) }
        #expect(throws: StreamDeliveryFrameError.cursorOrder) {
            try StreamDeliveryFrame(entries: [try Self.entry(2, Data([1])), try Self.entry(1, Data([1]))])
        }
        #expect(throws: StreamDeliveryFrameError.emptyEnvelope) { try Self.entry(1, Data()) }
        #expect(throws: StreamDeliveryFrameError.invalidCursor) { try Self.entry(0, Data([1])) }
    }

    @Test("damaged frames: every cut and every one-byte change is refused or reads as exactly the bytes it was")
    func damagedFrames() throws {
        let frame = try StreamDeliveryFrame(
            entries: [try Self.entry(7, Data([1, 2, 3])), try Self.entry(9, Data([4]))]
        ).serialized()
        for end in 0..<frame.count {
            #expect(throws: StreamDeliveryFrameError.self) { try StreamDeliveryFrame(serialized: frame.prefix(end)) }
        }
        var read = 0
        for index in frame.indices {
            for value: UInt8 in [0x00, 0x01, 0x7F, 0x80, 0xFF, frame[index] ^ 0x10] {
                var damaged = frame
                damaged[index] = value
                guard let parsed = try? StreamDeliveryFrame(serialized: damaged) else { continue }
                #expect(parsed.serialized() == damaged, "byte \(index) = \(value)")
                read += 1
            }
        }
        // Changes in ids, times and envelope bytes still read; in counts, lengths and cursors mostly not.
        #expect(read > 0)
    }

    @Test("Python reads the frames Swift writes and refuses the same malformed ones")
    func pythonReads() async throws {
        let envelopes = [1, 2, 255, 4_097].map { count in Data((0..<count).map { _ in UInt8.random(in: 0...255) }) }
        let entries = try envelopes.enumerated().map { index, envelope in
            try StreamDeliveryFrame.Entry(
                cursor: Int64(index * 5 + 1), receivedAtMilliseconds: 1_764_000_000_000 + Int64(index),
                sender: DeviceAddress(userID: UUID(), deviceID: UUID()), messageID: .timeOrdered(), envelope: envelope)
        }
        let frame = try StreamDeliveryFrame(entries: entries).serialized()
        let read = try await PythonScript.run("stream_delivery_frame.py", ["parse", Self.hex(frame)])
        #expect(read.split(separator: "\n").map(String.init) == entries.map(Self.line))
        for (hex, _) in Self.malformed {
            let answer = try await PythonScript.run("stream_delivery_frame.py", ["parse", hex])
            #expect(answer.hasPrefix("refused"), "\(hex): \(answer)")
        }
    }

    /// An entry as `stream_delivery_frame.py` prints it.
    private static func line(_ entry: StreamDeliveryFrame.Entry) -> String {
        "\(entry.cursor) \(entry.receivedAtMilliseconds) \(entry.sender.userID.canonicalString) "
            + "\(entry.sender.deviceID.canonicalString) \(entry.messageID.canonicalString) \(hex(entry.envelope))"
    }

    /// The same line for an entry read over HTTP (JSON).
    private static func line(_ entry: Components.Schemas.MailboxEntry) -> String {
        "\(entry.cursor) \(StreamDeliveryForm.milliseconds(entry.receivedAt)) \(entry.senderUserId) "
            + "\(entry.senderDeviceId ?? "") \(entry.messageId ?? "") \(hex(entry.envelope?.data ?? []))"
    }

    @Test("binary frames: envelopes up to 256 and 256 KiB a frame, a larger one alone, notices as text in their place")
    func frameSplitting() throws {
        var entries = StreamFrameTextTests.batchFixture { Int64($0 + 1) * 10 }
        // Notices first, in the middle (between two frames' worth of envelopes) and last.
        for (position, cursor) in [(0, 1), (261, 2_605), (entries.count + 2, 9_999_999)] {
            entries.insert(
                StreamFrameTextTests.notice(cursor: Int64(cursor), like: entries[0]), at: min(position, entries.count))
        }
        let frames = try StreamDeliveryForm.binary.frames(entries)
        var read: [Components.Schemas.MailboxEntry] = []
        var shape: [String] = []
        for frame in frames {
            switch frame {
            case .text(let text):
                let decoded = try StreamCoding.decoder().decode(
                    Components.Schemas.StreamFrame.self, from: Data(text.utf8))
                let batch = decoded.entries ?? []
                #expect(batch.allSatisfy { $0.kind == .keyChange })
                shape.append("t\(batch.count)")
                read += batch
            case .binary(var buffer):
                let parsed = try StreamDeliveryFrame(
                    serialized: Data(buffer.readBytes(length: buffer.readableBytes) ?? []))
                shape.append("b\(parsed.entries.count)")
                read += parsed.entries.map(\.mailboxEntry)
            }
        }
        // 1 notice; 260 small; 1 notice; 40 small; the large one alone; 2 + 2 + 1 of 100 KiB; 1 notice.
        #expect(shape == ["t1", "b256", "b4", "t1", "b40", "b1", "b2", "b2", "b1", "t1"])
        let expected = try entries.map { try $0.wire }
        #expect(read.map(\.cursor) == expected.map(\.cursor))
        #expect(read.map(Self.line) == expected.map(Self.line))
        #expect(try StreamDeliveryForm.binary.frames([]).isEmpty)
    }

    @Test(
        "deliveries=binary: stored and live envelopes in binary frames, a key change as text in its place, as HTTP reads them; bad values refused",
        arguments: TestDatabaseKind.allCases)
    func relayDelivers(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let carol = try await TestUser.make(relay, name: "carol")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            // Bob hears of carol's key changes once she has written to him.
            _ = try await carol.send("hello", to: toBob)
            for index in 0..<20 { _ = try await alice.send("stored \(index)", to: toBob) }
            _ = try await TestUser.signIn(
                relay, id: carol.id, email: carol.email, password: carol.password,
                identity: try PrivateIdentity.generate())
            for index in 20..<25 { _ = try await alice.send("stored \(index)", to: toBob) }
            let overHTTP = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 100)).ok.body.json.entries
            #expect(overHTTP.count == 27)
            #expect(overHTTP.filter { $0.kind == .keyChange }.count == 1)

            let bobStream = try await StreamClient.connect(port: relay.port, user: bob, batched: true, binary: true)
            var replay: [Components.Schemas.MailboxEntry] = []
            while true {
                guard let frame = await bobStream.frames.next(1).first else { break }
                replay += (frame.entry.map { [$0] } ?? []) + (frame.entries ?? [])
                if frame.caughtUp == true { break }
            }
            #expect(replay.map(Self.line) == overHTTP.map(Self.line))
            #expect(
                replay.first { $0.kind == .keyChange }?.keyChange == overHTTP.first { $0.kind == .keyChange }?.keyChange
            )
            // Envelopes before and after the key change: two binary frames at least.
            #expect(bobStream.binaryFrames.value >= 2)

            // The same bytes read by the Python reader, from its own connection.
            let python = try await PythonScript.run(
                "stream_delivery_frame.py", ["receive", "\(relay.port)", bob.streamCredentials, "\(overHTTP.count)"])
            let lines = python.split(separator: "\n").map(String.init)
            #expect(
                lines.filter { $0 != "binary" && !$0.hasPrefix("text ") }
                    == overHTTP.filter { $0.kind == .envelope }.map(Self.line))
            #expect(lines.filter { $0.hasPrefix("text ") }.count == 1, "\(python)")

            // Live: sent while bob listens, in binary frames, each once, in order.
            let aliceStream = try await RelayStreamSendTests.connect(relay, alice)
            let before = bobStream.binaryFrames.value
            for index in 0..<30 { try await aliceStream.sendBinary(try alice.batch("live \(index)", to: toBob)) }
            #expect(await aliceStream.frames.next(30, within: 30).compactMap(\.receipt).count == 30)
            var live: [Components.Schemas.MailboxEntry] = []
            while live.count < 30, let frame = await bobStream.frames.next(1, within: 30).first {
                live += frame.entries ?? []
            }
            #expect(try live.map { try bob.read($0, from: alice) } == (0..<30).map { "live \($0)" })
            #expect(bobStream.binaryFrames.value > before)
            #expect(zip(replay + live, (replay + live).dropFirst()).allSatisfy { $0.cursor < $1.cursor })

            for query in ["deliveries=xml", "deliveries=BINARY", "deliveries=binary&batched=yes"] {
                var request = HTTPClientRequest(url: relay.baseURL.absoluteString + "/v1/stream?after=0&\(query)")
                request.headers.add(name: "Authorization", value: "Bearer \(bob.token)")
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                #expect(response.status == .badRequest, "\(query)")
            }
            var anonymous = HTTPClientRequest(
                url: relay.baseURL.absoluteString + "/v1/stream?after=0&deliveries=binary")
            anonymous.headers.add(name: "Authorization", value: "Bearer not-a-session")
            #expect(try await HTTPClient.shared.execute(anonymous, timeout: .seconds(30)).status == .unauthorized)
            for stream in [aliceStream, bobStream] { await stream.close() }
        }
    }
}
