import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

/// Envelope v3 (docs/PROTOCOL.md §10.4): a clear header repeated inside the sender-key message.
@Suite("Group envelopes")
struct GroupEnvelopeTests {
    static let sender = DeviceAddress(
        userID: UUID(uuidString: "11111111-1111-4111-8111-111111111111")!,
        deviceID: UUID(uuidString: "22222222-2222-4222-8222-222222222222")!)
    static let messageID = UUID(uuidString: "0192d7e0-0000-7000-8000-000000000001")!
    static let time = Date(timeIntervalSince1970: 1_764_633_600.5)

    static func sealed(_ text: String = "hello group") throws -> (GroupEnvelope, SenderKeyReceivingChain) {
        var chain = try SenderKeyTests.fixedChain()
        let receiver = SenderKeyReceivingChain(chain.distribution)
        let envelope = try GroupEnvelope.seal(
            Data(text.utf8), chain: &chain, sender: sender, messageID: messageID, timestamp: time)
        return (envelope, receiver)
    }

    @Test("Known answer: the header and the sealed message of a fixed chain")
    func knownAnswer() throws {
        let (envelope, receiver) = try Self.sealed()
        let bytes = [UInt8](envelope.serialized)
        #expect(
            bytes[0..<58].hexString
                == "0300" + "11111111111141118111111111111111" + "22222222222242228222222222222222"
                + "0192d7e0000070008000000000000001" + "0000019adc5be1f4")
        // Header 58 + "hello group" 11 = 69 bytes, padded to 80, + tag.
        #expect(bytes[58..<83].hexString == "01" + "0f1e2d3c4b5a69788796a5b4c3d2e1f0" + "00000000" + "00000060")
        #expect(bytes[83..<179].hexString == Self.knownCiphertext)
        #expect(bytes.count == 58 + 25 + 96 + 64)
        var chain = receiver
        #expect(try GroupEnvelope(serialized: envelope.serialized).open(with: &chain) == Data("hello group".utf8))
    }

    static let knownCiphertext =
        "d575d6f479df9744aafd1c51e97e46e398c71723a11e6441cd43086fc899b1c417efef7aa2054da3844a25d1c566d17c"
        + "61c8ef6a86211e8f0a10f3e11f5477ed7db408ed5c69f58c4a44c62478e1db92346fe65d412db5fa1556cf4c203cf73e"

    @Test("A changed header, flags or message does not open; the chain stays where it was")
    func tamper() throws {
        let (envelope, receiver) = try Self.sealed()
        let bytes = envelope.serialized
        for offset in [3, 20, 40, 57] {
            var changed = bytes
            changed[offset] ^= 1
            var chain = receiver
            #expect(throws: SenderKeyError.tampered, "header byte \(offset)") {
                _ = try GroupEnvelope(serialized: changed).open(with: &chain)
            }
            var again = chain
            #expect(try envelope.open(with: &again) == Data("hello group".utf8), "the chain did not move")
        }
        var flagged = bytes
        flagged[1] = 1
        #expect(throws: EnvelopeError.malformed("unknown group envelope flags")) {
            try GroupEnvelope(serialized: flagged)
        }
        var signed = bytes
        signed[signed.count - 1] ^= 1
        var chain = receiver
        #expect(throws: SenderKeyError.badSignature) { _ = try GroupEnvelope(serialized: signed).open(with: &chain) }
    }

    @Test("Malformed group envelopes are refused with the reason; other versions go to their own readers")
    func malformed() throws {
        let (envelope, _) = try Self.sealed()
        let bytes = envelope.serialized
        #expect(throws: EnvelopeError.truncated) { try GroupEnvelope(serialized: bytes.prefix(30)) }
        #expect(throws: EnvelopeError.otherVersion(found: 2, reader: 3)) {
            try GroupEnvelope(serialized: Data([2]) + bytes.dropFirst())
        }
        #expect(throws: EnvelopeError.unknownVersion(9)) {
            try GroupEnvelope(serialized: Data([9]) + bytes.dropFirst())
        }
        #expect(throws: (any Error).self) { try GroupEnvelope(serialized: bytes.dropLast()) }
        // A group envelope is no one-recipient envelope: the v1 and v2 readers say what it is.
        #expect(throws: EnvelopeError.otherVersion(found: 3, reader: 1)) { try WireEnvelope(serialized: bytes) }
        #expect(throws: EnvelopeError.otherVersion(found: 3, reader: 2)) { try RatchetEnvelope(serialized: bytes) }
        #expect(throws: SenderKeyError.tooLarge(GroupEnvelope.maximumPayloadBytes + 1)) {
            var chain = try SenderKeyTests.fixedChain()
            _ = try GroupEnvelope.seal(
                Data(count: GroupEnvelope.maximumPayloadBytes + 1), chain: &chain, sender: Self.sender,
                messageID: Self.messageID, timestamp: Self.time)
        }
    }
}
