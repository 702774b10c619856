import ConfidantAPI
import ConfidantCrypto
import Foundation
import Testing

@testable import ConfidantKit

/// Tests/Interop/group_interop.py, written from docs/PROTOCOL.md §10 alone, reads the changes and
/// the group message written here, and the changes as a kind 7 payload, and writes a change, its
/// payload and a message this side takes.
@Suite("Group formats against an independent implementation")
struct GroupInteropTests {
    @Test("Python reads Swift's changes and group message; Swift takes Python's")
    func bothWays() throws {
        let people = try GroupPeople(count: 3)
        var ledger = GroupLedger(groupID: people.groupID)
        let creation = try people.creation(name: "Familie é")
        _ = try ledger.insert(creation, from: people)
        var changes = [creation]
        changes.append(try ledger.make(.promote(people[1].user), by: 0, people))
        changes.append(try ledger.make(.rename("Team ✓"), by: 1, people))
        changes.append(try ledger.make(.remove([people[2].user]), by: 0, people))
        changes.append(try ledger.make(.timer(seconds: 3_600), by: 0, people))
        changes.append(try ledger.make(.picture(Data(repeating: 0xAB, count: 32)), by: 1, people))
        changes.append(try ledger.make(.add([people[2].user]), by: 1, people))

        var sender = SenderKeySendingChain(groupID: people.groupID)
        let receiverStart = sender.distribution
        var receiver = SenderKeyReceivingChain(receiverStart)
        let distribution = sender.distribution.serialized
        let message = try sender.seal(Data("hello from Swift, ü".utf8))
        _ = try receiver.open(message)
        // A group envelope (v3) with the next key, and the shared frame that uploads it.
        let author = DeviceAddress(userID: people[0].user, deviceID: people[0].identity.deviceID)
        let envelope = try GroupEnvelope.seal(
            try ChatPayload(
                conversation: people.groupID, content: .groupMessage(messageID: Self.saidID, text: "sealed once, é")
            ).serialized, chain: &sender, sender: author, messageID: Self.saidID,
            timestamp: Date(timeIntervalSince1970: 1_764_633_600.123))
        let recipients = people.people.dropFirst().map {
            DeviceAddress(userID: $0.user, deviceID: $0.identity.deviceID)
        }
        let frame = try SharedSendFrame(recipients: recipients, envelope: envelope.serialized, after: Self.saidID)

        let writer = people[1]
        let vectors: [String: Any] = [
            "changes": changes.map { $0.serialized.hexString },
            "digests": changes.map(\.digest.description),
            "actions": ["create", "promote", "rename", "remove", "timer", "picture", "add"],
            "author_public": Dictionary(
                uniqueKeysWithValues: people.people.map {
                    (Self.hex($0.identity.deviceID), $0.identity.signingKey.publicKey.rawRepresentation.hexString)
                }),
            "payload": try ChatPayload(
                conversation: people.groupID, content: .groupChanges(changes.map(\.serialized))
            ).serialized.hexString,
            "group_message": try ChatPayload(
                conversation: people.groupID,
                content: .groupMessage(messageID: Self.saidID, text: "to everyone, é")
            ).serialized.hexString,
            "group_message_id": Self.saidID.canonicalString, "group_message_text": "to everyone, é",
            "group_reply": try ChatPayload(
                conversation: people.groupID,
                content: .groupMessage(
                    messageID: Self.saidID, text: "yes, at 7",
                    replyTo: ReplyQuote(messageID: Self.saidID, excerpt: "to everyone, é"))
            ).serialized.hexString,
            "reaction": try ChatPayload(
                conversation: people.groupID, content: .reaction(messageID: Self.saidID, emoji: "👍🏽")
            ).serialized.hexString,
            "reaction_emoji": "👍🏽",
            "reaction_removal": try ChatPayload(
                conversation: people.groupID, content: .reaction(messageID: Self.saidID, emoji: nil)
            ).serialized.hexString,
            "distribution": distribution.hexString, "message": message.serialized.hexString,
            "plaintext": "hello from Swift, ü", "sending_chain": sender.serialized.hexString, "skip_to": 4,
            "group_envelope": envelope.serialized.hexString, "shared_frame": frame.serialized().hexString,
            "recipients": recipients.map { Self.hex($0.userID) + Self.hex($0.deviceID) },
            "sender_key_payload": try ChatPayload(
                conversation: people.groupID, content: .senderKey(receiverStart)
            ).serialized.hexString,
            "writer": [
                "user": Self.hex(writer.user), "device": Self.hex(writer.identity.deviceID),
                "private": writer.identity.signingKey.rawRepresentation.hexString,
            ],
        ]
        let output = try Self.runPython(vectors)

        let payload = try ChatPayload(serialized: try Self.bytes(output["payload"]))
        #expect(payload.conversation == people.groupID)
        #expect(payload.content == .groupChanges([try Self.bytes(output["change"])]))
        let reply = try ChatPayload(serialized: try Self.bytes(output["group_message"]))
        #expect(
            reply.conversation == people.groupID
                && reply.content
                    == .groupMessage(
                        messageID: try #require(UUID(uuidString: "0192d7e0-0000-7000-8000-00000000000a")),
                        text: "Python says hi ✓")
        )
        let pythonReply = try ChatPayload(serialized: try Self.bytes(output["group_reply"]))
        #expect(
            pythonReply.content
                == .groupMessage(
                    messageID: try #require(UUID(uuidString: "0192d7e0-0000-7000-8000-00000000000c")),
                    text: "answered in Python",
                    replyTo: ReplyQuote(messageID: Self.saidID, excerpt: "to everyone, é")))
        let reaction = try ChatPayload(serialized: try Self.bytes(output["reaction"]))
        #expect(
            reaction.conversation == people.groupID
                && reaction.content
                    == .reaction(
                        messageID: try #require(UUID(uuidString: "0192d7e0-0000-7000-8000-00000000000a")), emoji: "🎉")
        )
        let change = try GroupChange(serialized: try Self.bytes(output["change"]))
        #expect(try ledger.insert(change, from: people) == .placed)
        #expect(ledger.outcome(of: change.digest) == .applied)
        #expect(ledger.state?.name == "Named in Python")
        let pythonMessage = try SenderKeyMessage(serialized: try Self.bytes(output["message"]))
        #expect(pythonMessage.iteration == 4)
        #expect(try receiver.open(pythonMessage) == Data(((output["plaintext"] as? String) ?? "").utf8))
        let pythonEnvelope = try GroupEnvelope(serialized: try Self.bytes(output["group_envelope"]))
        #expect(pythonEnvelope.sender == author && pythonEnvelope.message.iteration == 5)
        let inner = try ChatPayload(serialized: try pythonEnvelope.open(with: &receiver))
        #expect(inner.content == .groupMessage(messageID: pythonEnvelope.messageID, text: "Python, once for all"))
        let pythonFrame = try SharedSendFrame(serialized: Array(try Self.bytes(output["shared_frame"])))
        #expect(pythonFrame.recipients == recipients && pythonFrame.after == nil)
        #expect(pythonFrame.envelope == pythonEnvelope.serialized)
    }

    static let saidID = UUID(uuid: (1, 2, 3, 4, 5, 6, 0x70, 8, 0x80, 10, 11, 12, 13, 14, 15, 16))

    static func hex(_ id: UUID) -> String { withUnsafeBytes(of: id.uuid) { Array($0) }.hexString }

    static func bytes(_ value: Any?) throws -> Data {
        let text = try #require(value as? String)
        var out = Data()
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            out.append(try #require(UInt8(text[index..<next], radix: 16)))
            index = next
        }
        return out
    }

    /// Needs python3 with `cryptography` (Tests/Interop/requirements.txt; the test command installs it).
    static func runPython(_ vectors: [String: Any]) throws -> [String: Any] {
        let directory = FileManager.default.temporaryDirectory
        let input = directory.appendingPathComponent("group-vectors-\(UUID()).json")
        let result = directory.appendingPathComponent("group-output-\(UUID()).json")
        try JSONSerialization.data(withJSONObject: vectors).write(to: input)
        defer {
            try? FileManager.default.removeItem(at: input)
            try? FileManager.default.removeItem(at: result)
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Interop/group_interop.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, input.path, result.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("group_interop: 41 passed, 0 failed"), "\(text)")
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: result)) as? [String: Any])
    }
}
