import ConfidantCrypto
import Foundation

/// What a queued message says to the peer's devices and to this account's other devices: a
/// plain text as kind 1; with files, a timer or a quote it replies to, kind 2 — the peer's copy with the files'
/// capabilities, the own copy without (its owner fetches freely). Files not yet uploaded and
/// granted to the peer are, here, once.
struct OutgoingPayloads: Sendable {
    let store: LocalStore
    let attachments: AttachmentTransfer

    func payloads(
        of message: ChatMessage, hasAttachments: Bool, progress: (@Sendable (AttachmentProgress) -> Void)?
    ) async throws -> (peer: Data, own: Data) {
        var pointers =
            hasAttachments
            ? try store.read { db in
                try store.attachments(of: message.id, peer: message.peer, direction: .outgoing, db)
            } : []
        let expiresAfter = message.expiresAt.map { Self.expiresAfter($0, sentAt: message.sentAt) }
        for index in pointers.indices {
            let before = pointers[index]
            if pointers[index].blobID == nil {
                pointers[index] = try await attachments.upload(pointers[index], for: message.peer) { progress?($0) }
            }
            if pointers[index].capability == nil, let blob = pointers[index].blobID {
                pointers[index].capability = try await attachments.grant(blob, to: message.peer)
            }
            if pointers[index] != before {
                let updated = pointers[index]
                try store.write { db in
                    try store.updateAttachment(
                        updated, message: message.id, peer: message.peer, direction: .outgoing, db)
                }
            }
        }
        return try Self.payloads(
            peer: message.peer, text: message.text, pointers: pointers, expiresAfter: expiresAfter,
            replyTo: message.reply)
    }

    static func expiresAfter(_ expiresAt: Date, sentAt: Date) -> Int {
        Int(expiresAt.timeIntervalSince(sentAt).rounded())
    }

    /// The payloads of a message whose attachments are uploaded and granted (`pointers`).
    static func payloads(
        peer: UUID, text: String?, pointers: [AttachmentPointer], expiresAfter: Int?, replyTo: ReplyQuote? = nil
    ) throws -> (peer: Data, own: Data) {
        guard !pointers.isEmpty || expiresAfter != nil || replyTo != nil else {
            guard let text else { throw ConfidantKitError.storeDamaged("the message is missing from the local store") }
            let payload = try ChatPayload(conversation: peer, text: text).serialized
            return (payload, payload)
        }
        let own = pointers.map { pointer -> AttachmentPointer in
            var copy = pointer
            copy.capability = nil
            return copy
        }
        return (
            try ChatPayload(
                conversation: peer,
                content: .message(
                    RichMessage(text: text, attachments: pointers, expiresAfter: expiresAfter, replyTo: replyTo))
            ).serialized,
            try ChatPayload(
                conversation: peer,
                content: .message(
                    RichMessage(text: text, attachments: own, expiresAfter: expiresAfter, replyTo: replyTo))
            ).serialized
        )
    }
}
