import AsyncHTTPClient
import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantServer

/// Binary receipt frames (docs/PROTOCOL.md §7.4): known answers, one encoding per frame, a second
/// reader in Python (`Tests/Interop/stream_receipt_frame.py`) written from the document, and the
/// relay answering a stream's sends with them when it asked.
@Suite("Binary receipt frames")
struct StreamReceiptFrameTests {
    private static func hex(_ bytes: some Sequence<UInt8>) -> String { Hex.string(bytes) }
    private static func bytes(_ hex: String) -> Data { Hex.bytes(hex) }

    private static let message = UUID(uuidString: "0192f1a0-0000-7000-8000-000000000001") ?? UUID()
    private static func receipt(
        _ id: UUID = message, stored: UInt16 = 2, duplicate: Bool = false, at milliseconds: Int64 = 1_764_000_000_123
    ) -> StreamReceiptFrame.Receipt {
        StreamReceiptFrame.Receipt(
            messageID: id, stored: stored, duplicate: duplicate, receivedAtMilliseconds: milliseconds)
    }

    /// The known answer's receipt, field by field.
    private static let receiptHex = "0192f1a0000070008000000000000001" + "0002" + "00" + "0000019ab697e87b"

    @Test("known answer and round trip, and the JSON receipt it stands for")
    func knownAnswer() throws {
        let frame = try StreamReceiptFrame(receipts: [Self.receipt()])
        #expect(Self.hex(frame.serialized()) == "02" + "0001" + Self.receiptHex)
        #expect(try StreamReceiptFrame(serialized: frame.serialized()) == frame)
        #expect(try StreamReceiptFrame(serialized: (Data([9, 9]) + frame.serialized()).dropFirst(2)) == frame)
        let receipts = (0..<512).map { (index: Int) -> StreamReceiptFrame.Receipt in
            let stored = UInt16(index * 127)
            return Self.receipt(.timeOrdered(), stored: stored, duplicate: index % 3 == 0, at: Int64(index) - 100)
        }
        let many = try StreamReceiptFrame(receipts: receipts)
        #expect(many.serialized().count == 3 + 512 * 27)
        #expect(try StreamReceiptFrame(serialized: many.serialized()) == many)

        let json = Self.receipt(duplicate: true).messageReceipt
        #expect(json.messageId == "0192f1a0-0000-7000-8000-000000000001")
        #expect(json.stored == 2 && json.duplicate)
        #expect(StreamDeliveryForm.milliseconds(json.receivedAt) == 1_764_000_000_123)
    }

    /// Every way bytes can fail to be exactly one frame, and why.
    static let malformed: [(hex: String, error: StreamReceiptFrameError)] = [
        ("", .truncated),
        ("02", .truncated),
        ("0200", .truncated),
        ("01" + "0001" + receiptHex, .notReceipts(1)),
        ("020000", .receiptCount(0)),
        ("020201", .receiptCount(513)),
        ("020001" + String(receiptHex.dropLast(2)), .truncated),
        ("020002" + receiptHex, .truncated),
        ("020001" + receiptHex + "00", .trailingBytes(1)),
        ("020001" + receiptHex.prefix(36) + "02" + receiptHex.suffix(16), .invalidDuplicateFlag(2)),
    ]

    @Test("malformed frames are refused with their reason")
    func malformedFrames() throws {
        for (hex, expected) in Self.malformed {
            #expect(throws: expected, "\(hex)") { try StreamReceiptFrame(serialized: Self.bytes(hex)) }
        }
        #expect(throws: StreamReceiptFrameError.receiptCount(0)) { try StreamReceiptFrame(receipts: []) }
        #expect(throws: StreamReceiptFrameError.receiptCount(513)) {
            try StreamReceiptFrame(receipts: Array(repeating: Self.receipt(), count: 513))
        }
    }

    @Test("damaged frames: every cut and every one-byte change is refused or reads as exactly the bytes it was")
    func damagedFrames() throws {
        let frame = try StreamReceiptFrame(receipts: [Self.receipt(), Self.receipt(.timeOrdered(), duplicate: true)])
            .serialized()
        for end in 0..<frame.count {
            #expect(throws: StreamReceiptFrameError.self) { try StreamReceiptFrame(serialized: frame.prefix(end)) }
        }
        var read = 0
        for index in frame.indices {
            for value: UInt8 in [0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF, frame[index] ^ 0x10] {
                var damaged = frame
                damaged[index] = value
                guard let parsed = try? StreamReceiptFrame(serialized: damaged) else { continue }
                #expect(parsed.serialized() == damaged, "byte \(index) = \(value)")
                read += 1
            }
        }
        #expect(read > 0)
    }

    @Test("Python reads the frames Swift writes and refuses the same malformed ones")
    func pythonReads() async throws {
        let receipts = (0..<5).map { (index: Int) -> StreamReceiptFrame.Receipt in
            let stored = UInt16(index * 300)
            let at = 1_764_000_000_000 - Int64(index)
            return Self.receipt(.timeOrdered(), stored: stored, duplicate: index == 3, at: at)
        }
        let read = try await PythonScript.run(
            "stream_receipt_frame.py", ["parse", Self.hex(try StreamReceiptFrame(receipts: receipts).serialized())])
        #expect(read.split(separator: "\n").map(String.init) == receipts.map(Self.line))
        for (hex, _) in Self.malformed {
            let answer = try await PythonScript.run("stream_receipt_frame.py", ["parse", hex])
            #expect(answer.hasPrefix("refused"), "\(hex): \(answer)")
        }
    }

    /// A receipt as `stream_receipt_frame.py` prints it.
    private static func line(_ receipt: StreamReceiptFrame.Receipt) -> String {
        "\(receipt.messageID.canonicalString) \(receipt.stored) \(receipt.duplicate) \(receipt.receivedAtMilliseconds)"
    }

    @Test(
        "receipts=binary: sends answered in binary receipt frames, several to a frame, a duplicate and a JSON send too; refusals as text; bad values refused",
        arguments: TestDatabaseKind.allCases)
    func relayAnswers(kind: TestDatabaseKind) async throws {
        try await TestRelay.run(kind) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            let bob = try await TestUser.make(relay, name: "bob")
            let toBob = [(bob.address, bob.identity.publicIdentity)]
            let stream = try await StreamClient.connect(port: relay.port, user: alice, binaryReceipts: true)
            #expect(await stream.frames.next(1).first?.caughtUp == true)

            let batches = try (0..<40).map { try alice.batch("binary \($0)", to: toBob, messageID: .timeOrdered()) }
            for batch in batches { try await stream.sendBinary(batch) }
            let receipts = await stream.frames.next(40).compactMap(\.receipt)
            #expect(Set(receipts.map(\.messageId)) == Set(batches.map { $0.messageId.lowercased() }))
            #expect(receipts.allSatisfy { $0.stored == 1 && !$0.duplicate })
            let frames = stream.receiptFrames.value
            #expect((1...40).contains(frames), "\(frames) frames for 40 receipts")

            // Sent again: a duplicate, in a binary frame too, with the time it was first stored.
            try await stream.sendBinary(batches[0])
            let again = try #require(await stream.frames.next(1).first?.receipt)
            #expect(again.duplicate && again.messageId == batches[0].messageId.lowercased())
            let first = receipts.first { $0.messageId == batches[0].messageId.lowercased() }
            #expect(again.receivedAt == first?.receivedAt)
            #expect(stream.receiptFrames.value == frames + 1)

            // A JSON send (its id in upper case, as this test writes it) is answered in binary too,
            // its id in lower case; a refusal is text.
            let upper = try alice.batch("upper", to: toBob, messageID: .timeOrdered())
            try await stream.send(upper)
            let upperReceipt = try #require(await stream.frames.next(1).first?.receipt)
            #expect(upperReceipt.messageId == upper.messageId.lowercased())
            #expect(stream.receiptFrames.value == frames + 2)
            let ghost = try PrivateIdentity.generate()
            let refused = try alice.batch(
                "to a device bob does not have",
                to: [(DeviceAddress(userID: bob.id, deviceID: ghost.deviceID), ghost.publicIdentity)])
            try await stream.sendBinary(refused)
            let refusal = await stream.frames.next(1).first?.refused
            #expect(refusal?.messageId.lowercased() == refused.messageId.lowercased())
            #expect(stream.receiptFrames.value == frames + 2)

            // Python, from its own connection, reads the relay's frames from the document.
            let more = try (0..<8).map { try alice.batch("python \($0)", to: toBob, messageID: .timeOrdered()) }
            let python = try await PythonScript.run(
                "stream_receipt_frame.py",
                ["send", "\(relay.port)", alice.streamCredentials]
                    + more.map { Self.hex($0.envelopes[0].envelope.data) })
            let lines = python.split(separator: "\n").map(String.init)
            let read = lines.filter { !$0.hasPrefix("frames ") && !$0.hasPrefix("text ") }
            #expect(Set(read.map { String($0.prefix(36)) }) == Set(more.map { $0.messageId.lowercased() }), "\(python)")
            #expect(read.allSatisfy { $0.contains(" 1 false ") }, "\(python)")
            #expect(lines.contains("text 0"), "\(python)")

            for query in ["receipts=xml", "receipts=BINARY", "receipts="] {
                var request = HTTPClientRequest(url: relay.baseURL.absoluteString + "/v1/stream?after=0&\(query)")
                request.headers.add(name: "Authorization", value: "Bearer \(alice.token)")
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                #expect(response.status == .badRequest, "\(query)")
            }
            var anonymous = HTTPClientRequest(url: relay.baseURL.absoluteString + "/v1/stream?after=0&receipts=binary")
            anonymous.headers.add(name: "Authorization", value: "Bearer not-a-session")
            #expect(try await HTTPClient.shared.execute(anonymous, timeout: .seconds(30)).status == .unauthorized)
            await stream.close()
        }
    }
}
