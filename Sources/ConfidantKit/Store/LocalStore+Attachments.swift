import ConfidantCrypto
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

    func chatAttachment(_ pointer: AttachmentPointer, index: Int) -> ChatAttachment {
        ChatAttachment(
            id: pointer.id, index: index, name: pointer.name, size: pointer.size, contentType: pointer.contentType,
            thumbnail: pointer.thumbnail,
            isLocal: FileManager.default.fileExists(atPath: attachmentFile(pointer.id).path))
    }

    /// Where this device keeps an attachment's encrypted file.
    func attachmentFile(_ id: UUID) -> URL { attachmentsDirectory.appendingPathComponent(id.canonicalString) }

    /// Creates `attachments/` (0700) when it is missing.
    func prepareAttachmentsDirectory() throws {
        try FileManager.default.createDirectory(
            at: attachmentsDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Removes the encrypted files of attachments whose rows are gone (best effort).
    func removeAttachmentFiles(_ ids: [UUID]) {
        for id in ids { try? FileManager.default.removeItem(at: attachmentFile(id)) }
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

    /// The attachment at `index` of a message this profile has (either direction).
    func attachment(ofMessage message: UUID, index: Int) throws -> (
        pointer: AttachmentPointer, direction: ChatMessage.Direction
    )? {
        try read { db in
            guard
                let record = try AttachmentRecord.filter(
                    AttachmentRecord.Columns.messageID == message.canonicalString
                        && AttachmentRecord.Columns.position == index
                        && AttachmentRecord.Columns.direction != ChatMessage.Direction.notice
                ).fetchOne(db)
            else { return nil }
            return (try openAttachment(record), record.direction)
        }
    }
}
