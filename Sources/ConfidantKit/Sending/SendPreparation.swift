import ConfidantCrypto
import Foundation
import Synchronization

/// What a new message needs before it is queued: its text and files checked against the limits,
/// the files encrypted into this device's attachment folder, and the peer's sending context and
/// keys read. Nothing here sends or queues.
final class SendPreparation: Sendable {
    let relay: RelayClient
    let store: LocalStore
    let directory: KeyDirectory
    let attachments: AttachmentTransfer
    /// The server's attachment limit, asked once: a file over it is refused before it is encrypted.
    private let blobLimit = Mutex<Int?>(nil)

    init(relay: RelayClient, store: LocalStore, directory: KeyDirectory, attachments: AttachmentTransfer) {
        self.relay = relay
        self.store = store
        self.directory = directory
        self.attachments = attachments
    }

    /// The peer's devices as read for a new message, and whether their keys changed since the
    /// user verified them. `keys` is nil when the server could not be asked: the message is
    /// queued, and the outbox delivers it later.
    struct PeerKeys {
        var keys: [PublicIdentity]?
        var changed: Bool
    }

    /// The text to send (nil for files alone), or the reason the message cannot be sent at all.
    static func checkedText(_ text: String?, attachments count: Int) throws -> String? {
        let text = text.flatMap { $0.isEmpty ? nil : $0 }
        let bytes = text?.utf8.count ?? 0
        guard bytes > 0 || count > 0 else { throw ConfidantKitError.emptyMessage }
        guard bytes <= ChatPayload.maximumTextBytes else {
            throw ConfidantKitError.messageTooLarge(bytes: bytes, limit: ChatPayload.maximumTextBytes)
        }
        guard count <= ChatPayload.maximumAttachments else {
            throw ConfidantKitError.tooManyAttachments(count: count, limit: ChatPayload.maximumAttachments)
        }
        return text
    }

    /// Refuses a file that cannot be read, or that would be larger encrypted than the server stores.
    func checkSizes(_ sources: [AttachmentSource]) async throws {
        guard !sources.isEmpty else { return }
        if blobLimit.withLock({ $0 }) == nil, case .ok(let ok)? = try? await relay.call({ try await $0.health() }),
            let limit = try? ok.body.json.maximumBlobBytes
        {
            blobLimit.withLock { $0 = Int(limit) }
        }
        let limit = blobLimit.withLock { $0 }
        for source in sources {
            let size = (try? FileManager.default.attributesOfItem(atPath: source.url.path)[.size] as? Int) ?? nil
            guard let size else { throw ConfidantKitError.attachmentUnreadable(source.url.path) }
            if let limit, MediaStreamSize.encrypted(size) > limit {
                throw ConfidantKitError.attachmentTooLarge(
                    name: source.url.lastPathComponent, bytes: size, limit: MediaStreamSize.plaintext(limit))
            }
        }
    }

    /// The files encrypted into the attachment folder for a message to `peer`, in order; on a
    /// failure none is left there.
    func encrypt(
        _ sources: [AttachmentSource], for peer: UUID, progress: @escaping @Sendable (AttachmentProgress) -> Void
    ) throws -> [AttachmentPointer] {
        var pointers: [AttachmentPointer] = []
        do {
            for source in sources { pointers.append(try attachments.prepare(source, for: peer, progress: progress)) }
        } catch {
            store.removeAttachmentFiles(Self.files(of: pointers, to: peer))
            throw error
        }
        return pointers
    }

    /// The encrypted files of a message to `peer` with these attachments.
    static func files(of pointers: [AttachmentPointer], to peer: UUID) -> [AttachmentFile] {
        pointers.map { AttachmentFile(attachment: $0.id, peer: peer, direction: .outgoing) }
    }

    /// The store's context for sending to `contact`, with the contact stored as the caller has it.
    /// `fresh`: read again rather than taken as last read (it was stale).
    func context(for contact: Contact, fresh: Bool = false) throws -> SendingContext {
        let known = try store.sendingContext(for: contact.id, fresh: fresh)
        guard known.contact != contact else { return known }
        try store.replaceContact(contact)
        // Read again: the change made the one read stale.
        return try store.sendingContext(for: contact.id, fresh: true)
    }

    /// The peer's keys for sending; a change since the user verified them that the send did not
    /// confirm throws.
    func keys(of contact: Contact, _ known: SendingContext, confirmKeyChange: Bool) async throws -> PeerKeys {
        do {
            let keys = try await directory.keysForSending(of: contact.id)
            let changed = try directory.keysChanged(of: contact.id, verifiedDigest: known.verifiedDigest)
            if changed, !confirmKeyChange {
                throw ConfidantKitError.keyChangedSinceVerification(name: contact.displayName)
            }
            return PeerKeys(keys: keys, changed: changed)
        } catch let error as ConfidantKitError where error.isTransient {
            // Whether they changed is not known until the keys are at hand.
            return PeerKeys(keys: nil, changed: true)
        }
    }
}
