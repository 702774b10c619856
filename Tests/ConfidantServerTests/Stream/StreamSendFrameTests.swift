import ConfidantAPI
import ConfidantTestSupport
import Foundation
import Testing

/// The binary send frame (docs/PROTOCOL.md §7.2): known answers, one encoding per frame, and a
/// second implementation in Python (`Tests/Interop/stream_send_frame.py`) written from the document.
@Suite("Binary send frames")
struct StreamSendFrameTests {
    private static func hex(_ bytes: some Sequence<UInt8>) -> String { Hex.string(bytes) }
    private static func bytes(_ hex: String) -> Data { Hex.bytes(hex) }

    @Test("known answer and round trip")
    func knownAnswer() throws {
        let frame = try StreamSendFrame(envelopes: [Data([0xAA]), Data([1, 2, 3])])
        #expect(Self.hex(frame.serialized()) == "01" + "0002" + "00000001" + "aa" + "00000003" + "010203")
        #expect(try StreamSendFrame(serialized: frame.serialized()) == frame)
        let large = try StreamSendFrame(envelopes: (0..<256).map { Data(repeating: UInt8($0), count: $0 * 300 + 1) })
        #expect(try StreamSendFrame(serialized: large.serialized()) == large)
        // A frame read from the middle of a larger buffer reads the same.
        let bytes = Data([9, 9]) + frame.serialized()
        #expect(try StreamSendFrame(serialized: bytes.dropFirst(2)) == frame)

        // Version 2: the id of the message it follows, its 16 bytes, before the count.
        let after = try #require(UUID(uuidString: "00112233-4455-6677-8899-aabbccddeeff"))
        let ordered = try StreamSendFrame(envelopes: [Data([0xAA])], after: after)
        #expect(
            Self.hex(ordered.serialized()) == "02" + "00112233445566778899aabbccddeeff" + "0001" + "00000001" + "aa")
        #expect(try StreamSendFrame(serialized: ordered.serialized()) == ordered)
        #expect(try StreamSendFrame(serialized: (Data([9]) + ordered.serialized()).dropFirst()).after == after)
        // The array form (the relay's) reads the same frames.
        #expect(try StreamSendFrame(serialized: Array(frame.serialized())) == frame)
        #expect(try StreamSendFrame(serialized: Array(ordered.serialized())) == ordered)
    }

    /// Every way bytes can fail to be exactly one frame, and why.
    static let malformed: [(hex: String, error: StreamSendFrameError)] = [
        ("", .truncated),
        ("01", .truncated),
        ("0100", .truncated),
        ("04000100000001aa", .unsupportedVersion(4)),
        ("02000100000001aa", .truncated),
        ("0200112233445566778899aabbccddeeff0000", .envelopeCount(0)),
        ("0200112233445566778899aabbccddeeff000100000001aabb", .trailingBytes(1)),
        ("000001", .unsupportedVersion(0)),
        ("010000", .envelopeCount(0)),
        ("010101", .envelopeCount(257)),
        ("01000100000000", .emptyEnvelope),
        ("010001000000", .truncated),
        ("01000100000002aa", .truncated),
        ("01000200000001aa", .truncated),
        ("01000100000001aabb", .trailingBytes(1)),
    ]

    @Test("malformed frames are refused with their reason")
    func malformedFrames() throws {
        for (hex, expected) in Self.malformed {
            #expect(throws: expected, "\(hex)") { try StreamSendFrame(serialized: Self.bytes(hex)) }
            #expect(throws: expected, "\(hex) as an array") { try StreamSendFrame(serialized: Array(Self.bytes(hex))) }
        }
        #expect(throws: StreamSendFrameError.envelopeCount(0)) { try StreamSendFrame(envelopes: []) }
        #expect(throws: StreamSendFrameError.envelopeCount(257)) {
            try StreamSendFrame(envelopes: Array(repeating: Data([1]), count: 257))
        }
        #expect(throws: StreamSendFrameError.emptyEnvelope) { try StreamSendFrame(envelopes: [Data([1]), Data()]) }
    }

    @Test("Python reads the frames Swift writes and refuses the same malformed ones")
    func pythonReads() async throws {
        var generator = SystemRandomNumberGenerator()
        let envelopes = [1, 2, 255, 256, 4_097].map { count in
            Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        let frame = try StreamSendFrame(envelopes: envelopes).serialized()
        let read = try await PythonScript.run("stream_send_frame.py", ["parse", Self.hex(frame)])
        #expect(read.split(separator: "\n").map(String.init) == envelopes.map { Self.hex($0) })
        let after = UUID()
        let ordered = try StreamSendFrame(envelopes: envelopes, after: after).serialized()
        let readOrdered = try await PythonScript.run("stream_send_frame.py", ["parse", Self.hex(ordered)])
        #expect(
            readOrdered.split(separator: "\n").map(String.init)
                == ["after \(after.uuidString.lowercased())"] + envelopes.map { Self.hex($0) })
        for (hex, _) in Self.malformed {
            let answer = try await PythonScript.run("stream_send_frame.py", ["parse", hex])
            #expect(answer.hasPrefix("refused"), "\(hex): \(answer)")
        }
    }

    @Test("a frame Python writes is stored and delivered by the relay", arguments: TestDatabaseKind.allCases)
    func pythonSends(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let batch = try alice.batch("from python", to: [(bob.address, bob.identity.publicIdentity)])
            let answer = try await PythonScript.run(
                "stream_send_frame.py",
                ["send", "\(relay.port)", alice.streamCredentials] + batch.envelopes.map { Self.hex($0.envelope.data) })
            let receipt = try JSONDecoder().decode(
                [String: Receipt].self, from: Data(answer.split(separator: "\n").last.map(String.init)?.utf8 ?? "".utf8)
            )
            #expect(receipt["receipt"]?.messageId == batch.messageId.lowercased(), "\(answer)")
            #expect(receipt["receipt"]?.stored == 1, "\(answer)")
            let entries = try await bob.client.fetchMailbox(query: .init(after: 0, limit: 10)).ok.body.json.entries
            #expect(try entries.map { try bob.read($0, from: alice) } == ["from python"])
        }
    }

    private struct Receipt: Decodable {
        let messageId: String
        let stored: Int
    }
}
