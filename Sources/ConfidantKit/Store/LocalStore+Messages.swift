import ConfidantCrypto
import Foundation
import GRDB

/// Messages and notices, conversations and unread counts.
extension LocalStore {
    /// A message or notice to store; `text` nil with a reason for one that could not be read.
    struct NewMessage: Sendable {
        var id: UUID
        var peer: UUID
        var direction: ChatMessage.Direction
        var senderDevice: UUID?
        var sentAt: Date
        var text: String?
        var unreadableReason: String?
        var state: MessageState
        /// The envelope version that carried it (received messages).
        var envelopeVersion: Int? = nil
        /// Whether it waits to be seen: incoming messages and notices about the account itself.
        var startsUnread: Bool? = nil
        /// The files it carries.
        var attachments: [AttachmentPointer] = []
        /// When it disappears from this device.
        var expiresAt: Date? = nil
        /// What a notice is about.
        var noticeKind: ChatMessage.NoticeKind? = nil
        /// The member who wrote a message to a group.
        var author: UUID? = nil
        /// The message it answers.
        var reply: ReplyQuote? = nil
    }

    /// Stores messages in `db`'s transaction; a message seen before (same id, peer and direction)
    /// is not stored twice. Returns the messages newly stored.
    func insert(_ messages: [NewMessage], _ db: Database) throws -> [ChatMessage] {
        var stored: [ChatMessage] = []
        let followed = insertedLines.isFollowed
        for message in messages {
            let body = try message.text.map {
                try seal(Data($0.utf8), .message(id: message.id, peer: message.peer, direction: message.direction))
            }
            let excerpt = try message.reply.map {
                try seal(
                    Data($0.excerpt.utf8),
                    .replyExcerpt(id: message.id, peer: message.peer, direction: message.direction))
            }
            try db.cachedStatement(
                sql: """
                    INSERT OR IGNORE INTO message (message_id, peer_id, direction, sender_device, sent_at, body, unreadable_reason, state, is_read, envelope, expires_at, notice_kind, author_id, reply_to, reply_excerpt)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(
                arguments: [
                    message.id.canonicalString, message.peer.canonicalString, message.direction,
                    message.senderDevice?.canonicalString, message.sentAt.timeIntervalSince1970, body,
                    message.unreadableReason, message.state,
                    !(message.startsUnread ?? (message.direction == .incoming)),
                    message.envelopeVersion, message.expiresAt?.timeIntervalSince1970, message.noticeKind,
                    message.author?.canonicalString, message.reply?.messageID.canonicalString, excerpt,
                ])
            guard db.changesCount > 0 else { continue }
            let sequence = db.lastInsertedRowID
            for (position, pointer) in message.attachments.enumerated() {
                try AttachmentRecord(
                    attachmentID: pointer.id, messageID: message.id, peerID: message.peer, direction: message.direction,
                    position: position, sealed: try sealAttachment(pointer, message: message.id)
                ).insert(db)
            }
            if message.direction != .notice {
                try indexForSearch(
                    sequence, texts: (message.text.map { [$0] } ?? []) + message.attachments.map(\.name), db)
            }
            // The times as a read gives them back (seconds since 1970 in a double), so that this
            // message equals the row it is.
            let times = (
                sentAt: Date(timeIntervalSince1970: message.sentAt.timeIntervalSince1970),
                expiresAt: message.expiresAt.map { Date(timeIntervalSince1970: $0.timeIntervalSince1970) }
            )
            let line = ChatMessage(
                id: message.id, sequence: sequence, peer: message.peer, direction: message.direction,
                sentAt: times.sentAt, text: message.text, unreadableReason: message.unreadableReason,
                status: Self.status(message.state, failure: nil),
                isRead: !(message.startsUnread ?? (message.direction == .incoming)),
                envelopeVersion: message.envelopeVersion,
                attachments: message.attachments.enumerated().map { index, pointer in
                    chatAttachment(
                        pointer, index: index,
                        as: AttachmentFile(attachment: pointer.id, peer: message.peer, direction: message.direction))
                },
                expiresAt: times.expiresAt, noticeKind: message.noticeKind, author: message.author,
                reply: message.reply)
            if followed { insertedLines.inserted(line, sealed: body) }
            stored.append(line)
        }
        return stored
    }

    /// Stores messages in a transaction of their own.
    @discardableResult
    func insert(_ messages: [NewMessage]) throws -> [ChatMessage] {
        try write { db in try insert(messages, db) }
    }

    static func status(_ state: MessageState, failure: String?) -> ChatMessage.Status {
        switch state {
        case .pending: .pending
        case .sent: .sent
        case .delivered: .delivered
        case .read: .read
        case .failed: .failed(failure.map(DeliveryFailure.init(stored:)) ?? .other("unknown reason"))
        case .received: .received
        }
    }

    func chatMessage(_ record: MessageRecord, attachments: [AttachmentRecord] = []) throws -> ChatMessage {
        guard let sequence = record.seq else {
            throw ConfidantKitError.storeDamaged("a message has no sequence number")
        }
        return try chatMessage(
            record, sequence: sequence, text: record.body.map { try openText($0, of: record) },
            attachments: attachments)
    }

    private func openText(_ sealed: Data, of record: MessageRecord) throws -> String {
        String(
            decoding: try open(
                sealed, .message(id: record.messageID, peer: record.peerID, direction: record.direction)),
            as: UTF8.self)
    }

    private func chatMessage(_ record: MessageRecord, sequence: Int64, text: String?, attachments: [AttachmentRecord])
        throws -> ChatMessage
    {
        return ChatMessage(
            id: record.messageID, sequence: sequence, peer: record.peerID, direction: record.direction,
            sentAt: record.sentAt,
            text: text, unreadableReason: record.unreadableReason,
            status: Self.status(record.state, failure: record.failure),
            isRead: record.isRead, envelopeVersion: record.envelope,
            attachments: try attachments.sorted { $0.position < $1.position }.map {
                chatAttachment(try openAttachment($0), index: $0.position, as: AttachmentFile($0))
            },
            editedAt: record.editedAt, isDeleted: record.deletedAt != nil, expiresAt: record.expiresAt,
            noticeKind: record.noticeKind, author: record.authorID,
            reactions: record.reactions == nil ? [] : try storedReactions(of: record).shown,
            reply: try replyQuote(of: record))
    }

    /// Messages with their attachments: one query for all the attachments, not one per message.
    /// With `texts`, lines whose sealed text was opened by the fetch before are not opened again.
    /// `partial`: these are some of the lines shown, and the others stay (``OpenedTexts/fetch(partial:)``).
    func chatMessages(
        _ records: [MessageRecord], _ db: Database, texts: OpenedTexts? = nil, partial: Bool = false
    ) throws -> [ChatMessage] {
        var attachments: [AttachmentRecord] = []
        if records.count == 1 {
            // One message (every send, every receipt) by a cached statement.
            attachments = try AttachmentRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM attachment WHERE message_id = ?"),
                arguments: [records[0].messageID.canonicalString])
        } else if !records.isEmpty {
            // Any number of ids as one bound JSON array, so that the statement is prepared once
            // (an `IN` list of 200 placeholders was generated and compiled for every fetch).
            var ids = "["
            for (index, record) in records.enumerated() {
                ids += index == 0 ? "\"" : ",\""
                ids += record.messageID.canonicalString
                ids += "\""
            }
            ids += "]"
            attachments = try AttachmentRecord.fetchAll(
                db.cachedStatement(
                    sql: "SELECT * FROM attachment WHERE message_id IN (SELECT value FROM json_each(?))"),
                arguments: [ids])
        }
        // A message is its id, peer and direction (the same id can be in two directions).
        struct Key: Hashable {
            let id: UUID
            let peer: UUID
            let direction: ChatMessage.Direction
        }
        let byMessage = Dictionary(grouping: attachments) {
            Key(id: $0.messageID, peer: $0.peerID, direction: $0.direction)
        }
        // Pending messages: when the outbox tries them again, and why they wait (one query).
        let pending = records.filter { $0.state == .pending }.map(\.messageID.canonicalString)
        var waiting: [String: OutboxRecord] = [:]
        if !pending.isEmpty {
            let queued =
                pending.count == 1
                ? try OutboxRecord.fetchAll(
                    db.cachedStatement(sql: "SELECT * FROM outbox WHERE message_id = ?"), arguments: [pending[0]])
                : try OutboxRecord.filter(pending.contains(OutboxRecord.Columns.messageID)).fetchAll(db)
            for record in queued {
                waiting[record.messageID.canonicalString] = record
            }
        }
        var fetch = texts?.fetch(partial: partial)
        var messages: [ChatMessage] = []
        messages.reserveCapacity(records.count)
        for record in records {
            guard let sequence = record.seq else {
                throw ConfidantKitError.storeDamaged("a message has no sequence number")
            }
            let text = try record.body.map { sealed in
                try fetch?.text(sequence, sealed: sealed) { try openText($0, of: record) }
                    ?? openText(sealed, of: record)
            }
            var message = try chatMessage(
                record, sequence: sequence, text: text,
                attachments: byMessage[Key(id: record.messageID, peer: record.peerID, direction: record.direction)]
                    ?? [])
            if record.state == .pending, let queued = waiting[record.messageID.canonicalString] {
                message.retryAt = queued.nextAttemptAt
                message.waitingReason = queued.lastError
            }
            messages.append(message)
        }
        fetch?.finish()
        try markGoneReplyTargets(&messages, db)
        return messages
    }

    func history(with peer: UUID, limit: Int) throws -> [ChatMessage] {
        try read { db in try history(with: peer, limit: limit, db) }
    }

    /// The last `limit` lines with `peer`, oldest first; `texts` keeps what an observed chat opened.
    func history(with peer: UUID, limit: Int, _ db: Database, texts: OpenedTexts? = nil) throws -> [ChatMessage] {
        let records = try MessageRecord.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM message WHERE peer_id = ? ORDER BY seq DESC LIMIT ?"),
            arguments: [peer.canonicalString, limit])
        return try chatMessages(records.reversed(), db, texts: texts)
    }

    func message(id: UUID, direction: ChatMessage.Direction) throws -> ChatMessage? {
        try read { db in try message(id: id, direction: direction, db) }
    }

    func message(id: UUID, direction: ChatMessage.Direction, _ db: Database) throws -> ChatMessage? {
        try chatMessages(
            MessageRecord.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM message WHERE message_id = ? AND direction = ?"),
                arguments: [id.canonicalString, direction]), db
        ).first
    }

    /// Marks every line with `peer` read, and takes its "mark as unread" off; returns the ids of
    /// the incoming messages that were not read.
    /// With `receipts`, read receipts for those are queued to `peer` in the same transaction.
    /// One deferred commit: the chat marks each message read as it arrives. A read mark lost to a power cut shows the message unread
    /// again (and its receipt is queued again when it is read); a queued receipt is synced by the
    /// sealing that sends it, before it leaves.
    @discardableResult
    func markRead(peer: UUID, queueingReceipts receipts: Bool = false, now: Date = Date()) throws -> [UUID] {
        try write(.deferred) { db in
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql:
                        "SELECT message_id, author_id FROM message WHERE peer_id = ? AND is_read = 0 AND direction = ?"),
                arguments: [peer.canonicalString, ChatMessage.Direction.incoming])
            let incoming = rows.compactMap { UUID(uuidString: $0["message_id"]) }
            try db.cachedStatement(sql: "UPDATE message SET is_read = 1 WHERE peer_id = ? AND is_read = 0").execute(
                arguments: [peer.canonicalString])
            try clearUnreadMark(of: peer, db)
            guard receipts else { return incoming }
            // One-to-one, the receipt goes to the peer; in a group, to each message's author.
            let byAuthor = Dictionary(grouping: rows) { row in
                (row["author_id"] as String?).flatMap(UUID.init(uuidString:)) ?? peer
            }
            for (author, rows) in byAuthor.sorted(by: { $0.key.canonicalString < $1.key.canonicalString }) {
                let ids = rows.compactMap { UUID(uuidString: $0["message_id"]) }
                for chunk in stride(from: 0, to: ids.count, by: ChatPayload.maximumReceiptIDs) {
                    let part = Array(ids[chunk..<min(chunk + ChatPayload.maximumReceiptIDs, ids.count)])
                    try queueControl(
                        ChatPayload(conversation: peer, content: .receipt(Receipt(.read, messageIDs: part))),
                        to: author, now: now, db)
                }
            }
            return incoming
        }
    }
}
