import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

/// Sender keys (docs/PROTOCOL.md §10.4): one chain per member device, each message sealed once.
@Suite("Sender keys")
struct SenderKeyTests {
    static let groupID = UUID(uuidString: "00112233-4455-6677-8899-aabbccddeeff")!
    static let chainID = UUID(uuidString: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")!

    static func fixedChain() throws -> SenderKeySendingChain {
        SenderKeySendingChain(
            groupID: groupID, chainID: chainID, iteration: 0, chainKey: Array(repeating: 0x01, count: 32),
            signingKey: try Curve25519.Signing.PrivateKey(rawRepresentation: Array(repeating: 0x02, count: 32)))
    }

    @Test("Known answer: the first message of a fixed chain, byte for byte before its signature")
    func knownAnswer() throws {
        var chain = try Self.fixedChain()
        let message = try chain.seal(Data("hello group".utf8))
        let bytes = [UInt8](message.serialized)
        #expect(bytes.count == 25 + 32 + 16 + 64)
        #expect(
            bytes[0..<25].hexString
                == "01" + "0f1e2d3c4b5a69788796a5b4c3d2e1f0" + "00000000" + "00000030")
        #expect(
            bytes[25..<73].hexString
                == "d575d6ba12baea39d4cc6a32c71ab7f289d60632b00f4663ef612a4d8abb33e6e6a9c41cd7d51d739e5b22b2f74140fa")
        #expect(chain.iteration == 1)
        var receiver = SenderKeyReceivingChain(try Self.fixedChain().distribution)
        #expect(try receiver.open(message) == Data("hello group".utf8))
    }

    @Test("Messages open once each, in any order, within the skip bound")
    func outOfOrderAndReplay() throws {
        var sender = SenderKeySendingChain(groupID: Self.groupID)
        var receiver = SenderKeyReceivingChain(
            try SenderKeyDistribution(serialized: sender.distribution.serialized))
        let messages = try (0..<5).map { try sender.seal(Data("m\($0)".utf8)) }
        for index in [3, 0, 4, 1, 2] {
            let received = try SenderKeyMessage(serialized: messages[index].serialized)
            #expect(try receiver.open(received) == Data("m\(index)".utf8))
        }
        #expect(throws: SenderKeyError.duplicate) { try receiver.open(messages[2]) }
        #expect(throws: SenderKeyError.duplicate) { try receiver.open(messages[4]) }
        // A stored chain keeps what it skipped and what it opened.
        var stored = try SenderKeyReceivingChain(serialized: receiver.serialized)
        #expect(throws: SenderKeyError.duplicate) { try stored.open(messages[0]) }
        var restoredSender = try SenderKeySendingChain(serialized: sender.serialized)
        #expect(try stored.open(try restoredSender.seal(Data("m5".utf8))) == Data("m5".utf8))
    }

    @Test("A member who joins later gets the chain from where it is: earlier messages do not open")
    func laterMemberCannotReadEarlier() throws {
        var sender = SenderKeySendingChain(groupID: Self.groupID)
        let before = try sender.seal(Data("before".utf8))
        var late = SenderKeyReceivingChain(sender.distribution)
        let after = try sender.seal(Data("after".utf8))
        #expect(throws: SenderKeyError.duplicate) { try late.open(before) }
        #expect(try late.open(after) == Data("after".utf8))
    }

    @Test("Tampered, forged, foreign and oversized messages are refused without moving the chain")
    func refusals() throws {
        var sender = SenderKeySendingChain(groupID: Self.groupID)
        var receiver = SenderKeyReceivingChain(sender.distribution)
        let message = try sender.seal(Data("ok".utf8))
        var bytes = [UInt8](message.serialized)
        bytes[30] ^= 0x01
        #expect(throws: SenderKeyError.badSignature) { try receiver.open(try SenderKeyMessage(serialized: bytes)) }
        // A chain with the same id and key but another signing key: the signature fails.
        var impostor = SenderKeySendingChain(
            groupID: Self.groupID, chainID: sender.chainID, iteration: 0,
            chainKey: Array(repeating: 9, count: 32), signingKey: Curve25519.Signing.PrivateKey())
        #expect(throws: SenderKeyError.badSignature) { try receiver.open(try impostor.seal(Data("x".utf8))) }
        var other = SenderKeySendingChain(groupID: Self.groupID)
        #expect(throws: SenderKeyError.wrongChain) { try receiver.open(try other.seal(Data("x".utf8))) }
        #expect(try receiver.open(message) == Data("ok".utf8), "refusals left the chain as it was")
        #expect(throws: SenderKeyError.tooLarge(63_001)) { try sender.seal(Data(count: 63_001)) }
        for _ in 0...SenderKeyReceivingChain.maximumSkip { _ = try sender.seal(Data("skip".utf8)) }
        let far = try sender.seal(Data("far".utf8))
        #expect(throws: SenderKeyError.tooManySkipped(2_001)) { try receiver.open(far) }
        #expect(throws: SenderKeyError.malformed("truncated group message")) {
            try SenderKeyMessage(serialized: message.serialized.prefix(20))
        }
        #expect(throws: SenderKeyError.malformed("the ciphertext length does not match the message")) {
            try SenderKeyMessage(serialized: message.serialized + [0])
        }
        #expect(throws: SenderKeyError.unsupportedVersion(2)) {
            try SenderKeyDistribution(serialized: [2] + sender.distribution.serialized.dropFirst())
        }
    }
}
