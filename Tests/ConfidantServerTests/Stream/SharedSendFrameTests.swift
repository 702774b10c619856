import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import Testing

/// The shared send frame (docs/PROTOCOL.md §7.2, version 3): a known answer, one encoding per
/// frame, and every malformed form refused with its reason. Tests/Interop/group_interop.py reads
/// and writes it too.
@Suite("Shared send frames")
struct SharedSendFrameTests {
    static let user = UUID(uuidString: "00112233-4455-6677-8899-aabbccddeeff")!
    static let device = UUID(uuidString: "ffeeddcc-bbaa-9988-7766-554433221100")!

    @Test("known answer and round trip, with and without the message it follows")
    func knownAnswer() throws {
        let recipient = DeviceAddress(userID: Self.user, deviceID: Self.device)
        let frame = try SharedSendFrame(recipients: [recipient], envelope: Data([0xAA, 0xBB]))
        #expect(
            Hex.string(frame.serialized())
                == "03" + String(repeating: "00", count: 16) + "0001" + "00112233445566778899aabbccddeeff"
                + "ffeeddccbbaa99887766554433221100" + "00000002" + "aabb")
        #expect(try SharedSendFrame(serialized: Array(frame.serialized())) == frame)
        let ordered = try SharedSendFrame(recipients: [recipient], envelope: Data([1]), after: Self.user)
        #expect(Hex.string(ordered.serialized()).hasPrefix("03" + "00112233445566778899aabbccddeeff" + "0001"))
        #expect(try SharedSendFrame(serialized: Array(ordered.serialized())).after == Self.user)
        let many = try SharedSendFrame(
            recipients: (0..<SharedSendFrame.maximumRecipients).map { _ in
                DeviceAddress(userID: UUID(), deviceID: UUID())
            }, envelope: Data(repeating: 7, count: 1000))
        #expect(try SharedSendFrame(serialized: Array(many.serialized())) == many)
    }

    @Test("malformed frames are refused with their reason")
    func malformed() throws {
        let zeros = String(repeating: "00", count: 16)
        let address = String(repeating: "11", count: 32)
        let cases: [(String, StreamSendFrameError)] = [
            ("", .truncated),
            ("03", .truncated),
            ("01" + zeros + "0001", .unsupportedVersion(1)),
            ("03" + zeros + "0000", .recipientCount(0)),
            ("03" + zeros + "1001", .recipientCount(4097)),
            ("03" + zeros + "0001" + address, .truncated),
            ("03" + zeros + "0001" + address + "00000000", .emptyEnvelope),
            ("03" + zeros + "0001" + address + "00000002aa", .truncated),
            ("03" + zeros + "0001" + address + "00000001aabb", .trailingBytes(1)),
        ]
        for (hex, expected) in cases {
            #expect(throws: expected, "\(hex)") { try SharedSendFrame(serialized: Array(Hex.bytes(hex))) }
        }
        #expect(throws: StreamSendFrameError.recipientCount(0)) {
            try SharedSendFrame(recipients: [], envelope: Data([1]))
        }
        #expect(throws: StreamSendFrameError.emptyEnvelope) {
            try SharedSendFrame(recipients: [DeviceAddress(userID: Self.user, deviceID: Self.device)], envelope: Data())
        }
    }
}
