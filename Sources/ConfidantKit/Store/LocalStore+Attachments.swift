import ConfidantCrypto
import Crypto
import Foundation
import GRDB

/// Attachments: their pointers (sealed) per message, and the encrypted files in `attachments/`.
extension LocalStore {
    func sealAttachment(_ pointer: AttachmentPointer, message: UUID) throws -> Data {
        try seal(try JSONEncoder().encode(pointer), .attachment(id: pointer.id, message: message))
    }

    func openAttachment(_ record: AttachmentRecord) throws -> AttachmentPointer {
        let json = try open(record.sealed, .attachment(id: record.attachmentID, message: record.messageID))
        do {
            return try JSONDecoder().decode(AttachmentPointer.self, from: json)
        } catch {
            throw ConfidantKitError.storeDamaged("attachment \(record.attachmentID) does not decode (\(error))")
        }
    }

    func chatAttachment(_ pointer: AttachmentPointer, index: Int, as stored: AttachmentFile) -> ChatAttachment {
        ChatAttachment(
            id: pointer.id, index: index, name: pointer.name, size: pointer.size, contentType: pointer.contentType,
            thumbnail: pointer.thumbnail, isLocal: FileManager.default.fileExists(atPath: attachmentFile(stored).path))
    }

    /// Where this device keeps an attachment's encrypted file: named from the conversation, the
    /// direction and the attachment's id together, so that no sender can name another's file (and
    /// so have it served for theirs, or removed with theirs).
    func attachmentFile(_ stored: AttachmentFile) -> URL {
        attachmentsDirectory.appendingPathComponent(stored.fileName)
    }

    /// Creates `attachments/` (0700) when it is missing.
    func prepareAttachmentsDirectory() throws {
        try FileManager.default.createDirectory(
            at: attachmentsDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Gives the files of a store from before `AttachmentFile` their scoped names, once: each row's
    /// file linked under its own name (rows that shared an id each get the file), then the old
    /// names removed, then the mark (not synced: were it lost, the next open finds nothing left to
    /// do and writes it again).
    func nameAttachmentFilesByScope() throws {
        let done = try read { db in try MetaRecord.fetchOne(db, key: MetaRecord.Key.attachmentFiles.rawValue) != nil }
        guard !done else { return }
        let records = try read { db in try AttachmentRecord.fetchAll(db) }
        let manager = FileManager.default
        var old: Set<URL> = []
        for record in records {
            let legacy = attachmentsDirectory.appendingPathComponent(record.attachmentID.canonicalString)
            guard manager.fileExists(atPath: legacy.path) else { continue }
            old.insert(legacy)
            let scoped = attachmentFile(AttachmentFile(record))
            if !manager.fileExists(atPath: scoped.path) { try manager.linkItem(at: legacy, to: scoped) }
        }
        for file in old { try? manager.removeItem(at: file) }
        try write(.deferred) { db in
            try MetaRecord(key: MetaRecord.Key.attachmentFiles.rawValue, value: Data("scoped".utf8)).save(db)
        }
    }

    /// Removes the encrypted files of attachments whose rows are gone (best effort).
    func removeAttachmentFiles(_ files: [AttachmentFile]) {
        for file in files { try? FileManager.default.removeItem(at: attachmentFile(file)) }
    }

    /// A message's attachments, in order, as stored.
    func attachments(of message: UUID, peer: UUID, direction: ChatMessage.Direction, _ db: Database) throws
        -> [AttachmentPointer]
    {
        // A cached statement: every message sent asks, nearly always for none.
        try AttachmentRecord.fetchAll(
            db.cachedStatement(
                sql: "SELECT * FROM attachment WHERE message_id = ? AND peer_id = ? AND direction = ? ORDER BY position"
            ),
            arguments: [message.canonicalString, peer.canonicalString, direction]
        ).map(openAttachment)
    }

    /// Replaces a stored pointer (the blob id and capability once uploaded and granted).
    func updateAttachment(
        _ pointer: AttachmentPointer, message: UUID, peer: UUID, direction: ChatMessage.Direction, _ db: Database
    ) throws {
        try AttachmentRecord.filter(
            AttachmentRecord.Columns.messageID == message.canonicalString
                && AttachmentRecord.Columns.peerID == peer.canonicalString
                && AttachmentRecord.Columns.direction == direction
                && AttachmentRecord.Columns.attachmentID == pointer.id.canonicalString
        ).updateAll(db, Column("sealed").set(to: try sealAttachment(pointer, message: message)))
    }

    /// The attachment at `index` of a message this profile has (either direction), in the
    /// conversation with `peer` when given. Message ids are the senders' choice: without `peer`,
    /// an id that two conversations have is refused rather than guessed.
    func attachment(ofMessage message: UUID, index: Int, with peer: UUID?) throws -> (
        pointer: AttachmentPointer, file: AttachmentFile
    )? {
        try read { db in
            var filter =
                AttachmentRecord.Columns.messageID == message.canonicalString
                && AttachmentRecord.Columns.position == index
                && AttachmentRecord.Columns.direction != ChatMessage.Direction.notice
            if let peer { filter = filter && AttachmentRecord.Columns.peerID == peer.canonicalString }
            let records = try AttachmentRecord.filter(filter).limit(2).fetchAll(db)
            guard let record = records.first else { return nil }
            guard records.count == 1 else { throw ConfidantKitError.messageInSeveralConversations(message) }
            return (try openAttachment(record), AttachmentFile(record))
        }
    }
}

/// A stored attachment's encrypted file, named by what it belongs to: the attachment's id (the
/// sender's), the conversation and the direction (`LocalStore.attachmentFile(_:)`).
struct AttachmentFile: Sendable, Hashable {
    let attachment: UUID
    let peer: UUID
    let direction: ChatMessage.Direction

    init(attachment: UUID, peer: UUID, direction: ChatMessage.Direction) {
        self.attachment = attachment
        self.peer = peer
        self.direction = direction
    }

    init(_ record: AttachmentRecord) {
        self.init(attachment: record.attachmentID, peer: record.peerID, direction: record.direction)
    }

    /// 32 hex digits of SHA-256 over the three.
    var fileName: String {
        let text = "attachment file|\(peer.canonicalString)|\(direction.rawValue)|\(attachment.canonicalString)"
        return SHA256.hash(data: Data(text.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}
