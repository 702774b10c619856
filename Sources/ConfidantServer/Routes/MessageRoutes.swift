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
        let messageID = try Self.uuid(batch.messageId, "messageId")
        guard (1...256).contains(batch.envelopes.count) else { throw APIFailure.malformed("A message has 1 to 256 envelopes.") }

        var outgoing: [(DeviceAddress, Data)] = []
        for (index, item) in batch.envelopes.enumerated() {
            let recipient = DeviceAddress(userID: try Self.uuid(item.recipientUserId, "recipientUserId"),
                                          deviceID: try Self.uuid(item.recipientDeviceId, "recipientDeviceId"))
            let bytes = Data(item.envelope.data)
            guard bytes.count <= context.configuration.maximumEnvelopeBytes else {
                throw APIFailure.tooLarge("Envelope \(index)", limit: context.configuration.maximumEnvelopeBytes)
            }
            try Self.checkHeader(bytes, index: index, sender: caller.address, recipient: recipient, messageID: messageID)
            outgoing.append((recipient, bytes))
        }
        let recipients = outgoing.map(\.0)
        guard Set(recipients).count == recipients.count else { throw APIFailure.malformed("Two envelopes go to the same device.") }
        guard !recipients.contains(caller.address) else {
            throw APIFailure.malformed("Do not seal to the sending device itself; it keeps its own copy.")
        }

        let submission = MessageWriter.Submission(sender: caller.address, messageID: messageID,
                                                  envelopes: outgoing.map { MessageWriter.Envelope(recipient: $0.0, bytes: $0.1) })
        let receipt: Components.Schemas.MessageReceipt = switch try await context.messages.submit(submission, db: request.application.db, logger: request.logger) {
        case .stored(let count, let at): .init(messageId: batch.messageId, stored: count, duplicate: false, receivedAt: at)
        case .duplicate(let count, let at): .init(messageId: batch.messageId, stored: count, duplicate: true, receivedAt: at)
        }
        return .ok(.init(body: .json(receipt)))
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
        let count = try await Self.acknowledge(body.cursors, for: caller.address, context: context, on: request.db)
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
        let sender = row.sender.userID.uuidString.lowercased(), device = row.sender.deviceID.uuidString.lowercased()
        switch row.kind {
        case .envelope:
            return .init(cursor: row.cursor, kind: .envelope, senderUserId: sender, senderDeviceId: device,
                         messageId: row.messageID?.uuidString.lowercased(), receivedAt: row.receivedAt, envelope: .init(row.payload))
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
        guard !cursors.isEmpty else { return 0 }
        guard cursors.count <= 1000 else { throw APIFailure.malformed("Acknowledge at most 1,000 cursors at a time.") }
        return try await context.write(db) { db in try await MailboxQueries.delete(cursors, for: address, on: db) }
    }

    // MARK: - Checks

    /// The server cannot read an envelope (v1 or v2), but it can refuse one whose header claims
    /// another sender, another recipient or another message than the batch it arrives in.
    static func checkHeader(_ bytes: Data, index: Int, sender: DeviceAddress, recipient: DeviceAddress, messageID: UUID) throws(APIFailure) {
        let header: WireEnvelope
        do {
            header = try WireEnvelope(serialized: bytes)
        } catch {
            throw APIFailure(.badRequest, "invalid_envelope", "Envelope \(index) is not a sealed envelope: \(error)")
        }
        guard header.sender.userID == sender.userID, header.sender.deviceID == sender.deviceID else {
            throw APIFailure(.forbidden, "sender_mismatch", "Envelope \(index) names another sender than the signed-in device.")
        }
        guard header.recipient.userID == recipient.userID, header.recipient.deviceID == recipient.deviceID else {
            throw APIFailure(.badRequest, "envelope_mismatch", "Envelope \(index) is sealed to another device than the one it is addressed to.")
        }
        guard header.messageID == messageID else {
            throw APIFailure(.badRequest, "envelope_mismatch", "Envelope \(index) carries another message id than the batch.")
        }
    }
}
