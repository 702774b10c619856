import ConfidantAPI
import ConfidantCrypto
import Fluent
import Foundation
import SQLKit
import Vapor

extension RelayAPI {
    func sendMessage(_ input: Operations.SendMessage.Input) async throws -> Operations.SendMessage.Output {
        let (request, caller) = try await signedIn()
        guard case .json(let batch) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let submission = try Self.submission(batch, from: caller.address, maximumEnvelopeBytes: context.configuration.maximumEnvelopeBytes)
        let outcome = try await context.messages.submit(.send(submission), db: request.application.db)
        return .ok(.init(body: .json(try Self.receipt(outcome, messageID: batch.messageId))))
    }

    func fetchMailbox(_ input: Operations.FetchMailbox.Input) async throws -> Operations.FetchMailbox.Output {
        let (request, caller) = try await signedIn()
        let after = max(input.query.after ?? 0, 0)
        let limit = min(max(input.query.limit ?? 100, 1), 500)
        let rows = try await MailboxQueries.page(of: caller.address, after: after, limit: limit + 1, on: request.db)
        return .ok(.init(body: .json(.init(entries: try rows.prefix(limit).map(Self.entry), hasMore: rows.count > limit))))
    }

    func acknowledge(_ input: Operations.Acknowledge.Input) async throws -> Operations.Acknowledge.Output {
        let (request, caller) = try await signedIn()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let count = try await Self.acknowledge(body.cursors, for: caller.address, context: context, on: request.application.db)
        return .ok(.init(body: .json(.init(acknowledged: count))))
    }

    func recentConversations(_ input: Operations.RecentConversations.Input) async throws -> Operations.RecentConversations.Output {
        let (request, caller) = try await signedIn()
        let conversations = try await ConversationRecord.query(on: request.db).filter(\.$ownerID == caller.userID)
            .sort(\.$lastActivity, .descending).limit(200).all()
        let peers = try await UserRecord.query(on: request.db).filter(\.$id ~~ conversations.map(\.peerID)).all()
        let byID = Dictionary(peers.compactMap { user in user.id.map { ($0, user) } }, uniquingKeysWith: { first, _ in first })
        var unread: [UUID: Int] = [:]
        if let sql = request.db as? any SQLDatabase {
            let rows = try await sql.select()
                .column("sender_user_id")
                .column(SQLFunction("COUNT", args: SQLDistinct("message_id")), as: "unread")
                .from(MailboxRecord.schema)
                .where("recipient_user_id", .equal, caller.userID)
                .where("recipient_device_id", .equal, caller.deviceID)
                .where("kind", .equal, MailboxRecord.Kind.envelope.rawValue)
                .groupBy("sender_user_id")
                .all()
            for row in rows {
                unread[try row.decode(column: "sender_user_id", as: UUID.self)] = try row.decode(column: "unread", as: Int.self)
            }
        }
        let result = try conversations.compactMap { conversation -> Components.Schemas.Conversation? in
            guard let peer = byID[conversation.peerID] else { return nil }
            return .init(peer: try Self.userBody(peer), lastActivity: conversation.lastActivity, unread: unread[conversation.peerID] ?? 0)
        }
        return .ok(.init(body: .json(result)))
    }

    // MARK: - Shared with the stream

    static func entry(_ row: MailboxQueries.Row) throws -> Components.Schemas.MailboxEntry {
        let sender = row.sender.userID.canonicalString, device = row.sender.deviceID.canonicalString
        switch row.kind {
        case .envelope:
            return .init(cursor: row.cursor, kind: .envelope, senderUserId: sender, senderDeviceId: device,
                         messageId: row.messageID?.canonicalString, receivedAt: row.receivedAt, envelope: .init(row.payload))
        case .keyChange:
            let notice = try StreamCoding.decoder().decode(Components.Schemas.KeyChange.self, from: row.payload)
            return .init(cursor: row.cursor, kind: .keyChange, senderUserId: sender, senderDeviceId: device, receivedAt: row.receivedAt, keyChange: notice)
        case .prekeysLow:
            let status = try StreamCoding.decoder().decode(Components.Schemas.PrekeyStatus.self, from: row.payload)
            return .init(cursor: row.cursor, kind: .prekeysLow, senderUserId: sender, senderDeviceId: device, receivedAt: row.receivedAt, prekeys: status)
        }
    }

    /// Deletes the caller's own entries among `cursors`; anyone else's are left alone.
    static func acknowledge(_ cursors: [Int64], for address: DeviceAddress, context: RelayContext, on db: any Database) async throws -> Int {
        guard try checkAcknowledgement(cursors) else { return 0 }
        guard case .acknowledged(let count) = try await context.messages.submit(.acknowledge(cursors, for: address), db: db) else {
            throw APIFailure(.`internal`, "An acknowledgement was answered as a send.")
        }
        return count
    }

    /// Whether there is anything to acknowledge; too many cursors at once are refused.
    static func checkAcknowledgement(_ cursors: [Int64]) throws(APIFailure) -> Bool {
        guard cursors.count <= 1000 else { throw APIFailure.malformed("Acknowledge at most 1,000 cursors at a time.") }
        return !cursors.isEmpty
    }

    /// A batch as the writer takes it, after the checks every send gets (over HTTP or the stream):
    /// sizes, headers naming this sender, recipient and message, no device twice, not to itself.
    static func submission(_ batch: Components.Schemas.MessageBatch, from sender: DeviceAddress, maximumEnvelopeBytes: Int) throws(APIFailure) -> MessageWriter.Submission {
        let messageID = try uuid(batch.messageId, "messageId")
        guard (1...256).contains(batch.envelopes.count) else { throw APIFailure.malformed("A message has 1 to 256 envelopes.") }
        var envelopes: [MessageWriter.Envelope] = []
        for (index, item) in batch.envelopes.enumerated() {
            let recipient = DeviceAddress(userID: try uuid(item.recipientUserId, "recipientUserId"),
                                          deviceID: try uuid(item.recipientDeviceId, "recipientDeviceId"))
            let bytes = Data(item.envelope.data)
            guard bytes.count <= maximumEnvelopeBytes else { throw APIFailure.tooLarge("Envelope \(index)", limit: maximumEnvelopeBytes) }
            try checkHeader(bytes, index: index, sender: sender, recipient: recipient, messageID: messageID)
            envelopes.append(MessageWriter.Envelope(recipient: recipient, bytes: bytes))
        }
        let recipients = envelopes.map(\.recipient)
        guard Set(recipients).count == recipients.count else { throw APIFailure.malformed("Two envelopes go to the same device.") }
        guard !recipients.contains(sender) else { throw APIFailure.malformed("Do not seal to the sending device itself; it keeps its own copy.") }
        return MessageWriter.Submission(sender: sender, messageID: messageID, envelopes: envelopes)
    }

    static func receipt(_ outcome: MessageWriter.Outcome, messageID: String) throws -> Components.Schemas.MessageReceipt {
        switch outcome {
        case .stored(let count, let at): .init(messageId: messageID, stored: count, duplicate: false, receivedAt: at)
        case .duplicate(let count, let at): .init(messageId: messageID, stored: count, duplicate: true, receivedAt: at)
        case .acknowledged: throw APIFailure(.`internal`, "A send was answered as an acknowledgement.")
        }
    }

    // MARK: - Checks

    /// The server cannot read an envelope (v1 or v2), but it can refuse one whose header claims
    /// another sender, another recipient or another message than the batch it arrives in.
    static func checkHeader(_ bytes: Data, index: Int, sender: DeviceAddress, recipient: DeviceAddress, messageID: UUID) throws(APIFailure) {
        let header: WireEnvelope
        do {
            header = try WireEnvelope(serialized: bytes)
        } catch {
            throw APIFailure(.invalidEnvelope, "Envelope \(index) is not a sealed envelope: \(error)")
        }
        guard header.sender.userID == sender.userID, header.sender.deviceID == sender.deviceID else {
            throw APIFailure(.senderMismatch, "Envelope \(index) names another sender than the signed-in device.")
        }
        guard header.recipient.userID == recipient.userID, header.recipient.deviceID == recipient.deviceID else {
            throw APIFailure(.envelopeMismatch, "Envelope \(index) is sealed to another device than the one it is addressed to.")
        }
        guard header.messageID == messageID else {
            throw APIFailure(.envelopeMismatch, "Envelope \(index) carries another message id than the batch.")
        }
    }
}
