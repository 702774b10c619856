import ConfidantAPI
import ConfidantCrypto
import ConfidantVault
import Crypto
import Foundation
import OpenAPIRuntime

/// A file to attach to a message.
public struct AttachmentSource: Sendable {
    /// The file.
    public let url: URL
    /// The name the recipient sees; the file's own name when nil.
    public var name: String?
    /// The content type; judged from the name when nil.
    public var contentType: String?
    /// A small preview (PNG or JPEG, at most 16 KiB) an app made; a PNG or JPEG that small is its
    /// own preview when none is given.
    public var thumbnail: Data?

    /// The file at `url`.
    public init(url: URL, name: String? = nil, contentType: String? = nil, thumbnail: Data? = nil) {
        self.url = url
        self.name = name
        self.contentType = contentType
        self.thumbnail = thumbnail
    }
}

/// How far an attachment's encryption, upload, download or decryption is.
public struct AttachmentProgress: Sendable, Equatable {
    /// What is happening.
    public enum Stage: String, Sendable { case encrypting, uploading, downloading, decrypting }
    /// The file's name.
    public let name: String
    /// What is happening.
    public let stage: Stage
    /// Bytes done.
    public let done: Int64
    /// Bytes in all.
    public let total: Int64
}

/// Moves attachments between files, this device's encrypted copies (`attachments/<id>`, 0600)
/// and the relay: encrypted with a fresh key before anything leaves, checked against their
/// digest before anything is decrypted, streamed both ways in constant memory.
struct AttachmentTransfer: Sendable {
    /// Requests with a long deadline: a large file over a slow link.
    let relay: RelayClient
    let store: LocalStore
    /// One download per attachment at a time: a page that asks for a picture twice (a live
    /// region redrawn meanwhile) waits for the first download instead of racing it.
    private let downloads = DownloadGate()

    init(serverURL: URL, token: String?, store: LocalStore) {
        relay = RelayClient(serverURL: serverURL, token: token, timeout: .seconds(3600))
        self.store = store
    }

    /// Encrypts `source` into this device's attachment folder, as a file of a message to `peer`;
    /// the pointer has no blob yet.
    func prepare(
        _ source: AttachmentSource, for peer: UUID, progress: @escaping @Sendable (AttachmentProgress) -> Void
    ) throws -> AttachmentPointer {
        let name = source.name ?? source.url.lastPathComponent
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: source.url.path),
            attributes[.type] as? FileAttributeType == .typeRegular,
            FileManager.default.isReadableFile(atPath: source.url.path)
        else { throw ConfidantKitError.attachmentUnreadable(source.url.path) }
        let total = Int64((attributes[.size] as? Int) ?? 0)
        let contentType = source.contentType ?? Self.contentType(of: source.url)
        var thumbnail = source.thumbnail
        if thumbnail == nil, ["image/png", "image/jpeg"].contains(contentType),
            total <= AttachmentPointer.maximumThumbnailBytes
        {
            thumbnail = try? Data(contentsOf: source.url)
        }
        if let preview = thumbnail, preview.count > AttachmentPointer.maximumThumbnailBytes { thumbnail = nil }
        try store.prepareAttachmentsDirectory()
        let id = UUID()
        let key = VaultKey.generate()
        let file = store.attachmentFile(AttachmentFile(attachment: id, peer: peer, direction: .outgoing))
        let size: Int
        let digest: String
        do {
            // The digest of the encrypted bytes is taken as they are written: one pass over the file.
            (size, _, digest) = try MediaStream.encryptFileDigesting(at: source.url, to: file, key: key, objectID: id) {
                done in progress(.init(name: name, stage: .encrypting, done: Int64(done), total: total))
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw ConfidantKitError.attachmentUnreadable("\(source.url.path) (\(error))")
        }
        return AttachmentPointer(
            id: id, blobID: nil, capability: nil, key: key.rawRepresentation, digest: digest,
            size: size, contentType: contentType, name: String(name.prefix(200)), thumbnail: thumbnail)
    }

    /// Uploads the encrypted file (an outgoing message's to `peer`); returns the pointer with its
    /// blob id.
    func upload(
        _ pointer: AttachmentPointer, for peer: UUID, progress: @escaping @Sendable (AttachmentProgress) -> Void
    ) async throws -> AttachmentPointer {
        let file = store.attachmentFile(AttachmentFile(attachment: pointer.id, peer: peer, direction: .outgoing))
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw ConfidantKitError.storeDamaged("the encrypted file of \(pointer.name) is missing from this device")
        }
        let total = Int64(pointer.encryptedSize)
        let name = pointer.name
        let body = HTTPBody.streaming(handle, length: total, chunkSize: 256 * 1024) { done in
            progress(.init(name: name, stage: .uploading, done: done, total: total))
        }
        let receipt: Components.Schemas.BlobReceipt
        switch try await relay.call({ try await $0.uploadBlob(body: .binary(body)) }) {
        case .created(let created): receipt = try created.body.json
        case .default(let status, let response): throw problem(status, response)
        }
        // What the relay stored is what was sent: its hash is the one the message carries.
        guard receipt.sha256.lowercased() == pointer.digest, let blobID = UUID(uuidString: receipt.blobId) else {
            throw ConfidantKitError.badResponse("the relay stored \(pointer.name) with another hash than was sent")
        }
        var uploaded = pointer
        uploaded.blobID = blobID
        return uploaded
    }

    /// A capability for `user` to fetch the blob.
    func grant(_ blobID: UUID, to user: UUID) async throws -> String {
        let path = Operations.GrantBlob.Input.Path(blobId: blobID.canonicalString)
        let body = Components.Schemas.BlobGrantRequest(recipientUserId: user.canonicalString)
        switch try await relay.call({ try await $0.grantBlob(path: path, body: .json(body)) }) {
        case .created(let created): return try created.body.json.capability
        case .default(let status, let response): throw problem(status, response)
        }
    }

    /// Makes sure this device has the encrypted file: downloads it (as the recipient holding the
    /// capability, or as the owner) unless it is here, checks its size and digest, keeps it, and
    /// tells the relay this device has it. Nothing is kept when the check fails.
    @discardableResult
    func fetch(
        _ pointer: AttachmentPointer, as stored: AttachmentFile,
        progress: @escaping @Sendable (AttachmentProgress) -> Void
    ) async throws -> URL {
        try await downloads.once(stored) { try await download(pointer, as: stored, progress: progress) }
    }

    private func download(
        _ pointer: AttachmentPointer, as stored: AttachmentFile,
        progress: @escaping @Sendable (AttachmentProgress) -> Void
    ) async throws -> URL {
        let file = store.attachmentFile(stored)
        if FileManager.default.fileExists(atPath: file.path) { return file }
        guard let blobID = pointer.blobID else {
            throw ConfidantKitError.attachmentUnavailable(name: pointer.name, reason: "it was never uploaded")
        }
        try store.prepareAttachmentsDirectory()
        let path = Operations.DownloadBlob.Input.Path(blobId: blobID.canonicalString)
        let query = Operations.DownloadBlob.Input.Query(capability: pointer.capability)
        let body: HTTPBody
        switch try await relay.call({ try await $0.downloadBlob(path: path, query: query) }) {
        case .ok(let ok): body = try ok.body.binary
        case .default(404, _):
            throw ConfidantKitError.attachmentUnavailable(
                name: pointer.name, reason: "the server no longer has it (attachments are kept for a limited time)")
        case .default(let status, let response): throw problem(status, response)
        }
        let partial = store.attachmentsDirectory.appendingPathComponent(
            ".\(pointer.id.canonicalString).\(UUID().uuidString).partial")
        defer { try? FileManager.default.removeItem(at: partial) }
        guard
            FileManager.default.createFile(atPath: partial.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = try? FileHandle(forWritingTo: partial)
        else { throw ConfidantKitError.storeDamaged("cannot write to \(store.attachmentsDirectory.path)") }
        var hasher = SHA256()
        var received: Int64 = 0
        let expected = Int64(pointer.encryptedSize)
        do {
            defer { try? handle.close() }
            do {
                try await Self.copy(
                    body, named: pointer.name, to: handle, expected: expected, hasher: &hasher, received: &received
                ) { done in
                    progress(.init(name: pointer.name, stage: .downloading, done: done, total: expected))
                }
            } catch let error as ConfidantKitError {
                throw error
            } catch {
                throw ConfidantKitError.attachmentUnavailable(
                    name: pointer.name, reason: "the download broke off (\(RelayClient.describe(error))); try again")
            }
            try handle.synchronize()
        }
        guard received == expected else {
            throw ConfidantKitError.attachmentDamaged(
                name: pointer.name, reason: "it is shorter than its message says (truncated)")
        }
        guard hasher.finalize().hexString == pointer.digest else {
            throw ConfidantKitError.attachmentDamaged(
                name: pointer.name, reason: "its bytes do not match the digest its message carries")
        }
        try FileManager.default.moveItem(at: partial, to: file)
        let confirm = Operations.ConfirmBlobFetched.Input.Path(blobId: blobID.canonicalString)
        _ = try? await relay.call {
            try await $0.confirmBlobFetched(path: confirm, query: .init(capability: pointer.capability))
        }
        return file
    }

    /// Writes the body to `handle`, hashing it, refusing more than `expected` bytes.
    private static func copy(
        _ body: HTTPBody, named name: String, to handle: FileHandle, expected: Int64, hasher: inout SHA256,
        received: inout Int64,
        progress: (Int64) -> Void
    ) async throws {
        for try await chunk in body {
            received += Int64(chunk.count)
            guard received <= expected else {
                throw ConfidantKitError.attachmentDamaged(name: name, reason: "it is longer than its message says")
            }
            hasher.update(data: chunk)
            try handle.write(contentsOf: chunk)
            progress(received)
        }
    }

    /// Decrypts this device's copy into `destination`, which appears only when the whole file
    /// decrypted and authenticated.
    func decrypt(
        _ pointer: AttachmentPointer, as stored: AttachmentFile, to destination: URL,
        progress: @escaping @Sendable (AttachmentProgress) -> Void
    ) throws {
        let key = try VaultKey(rawRepresentation: pointer.key)
        let total = Int64(pointer.size)
        do {
            let size = try MediaStream.decryptFile(
                at: store.attachmentFile(stored), to: destination, key: key, objectID: pointer.id,
                name: pointer.name
            ) { done in
                progress(.init(name: pointer.name, stage: .decrypting, done: Int64(done), total: total))
            }
            guard size == pointer.size else {
                try? FileManager.default.removeItem(at: destination)
                throw ConfidantKitError.attachmentDamaged(
                    name: pointer.name, reason: "it decrypts to another size than its message says")
            }
        } catch let error as VaultError {
            throw ConfidantKitError.attachmentDamaged(name: pointer.name, reason: error.description)
        }
    }

    /// A reader of the plaintext for random access (a player's range requests).
    func reader(_ pointer: AttachmentPointer, as stored: AttachmentFile) throws -> MediaReader {
        do {
            return try MediaReader(
                url: store.attachmentFile(stored), key: try VaultKey(rawRepresentation: pointer.key),
                objectID: pointer.id, name: pointer.name)
        } catch let error as VaultError {
            throw ConfidantKitError.attachmentDamaged(name: pointer.name, reason: error.description)
        }
    }

    static func contentType(of url: URL) -> String {
        let byName = Vault.contentType(of: url)
        guard byName == "application/octet-stream", let handle = try? FileHandle(forReadingFrom: url) else {
            return byName
        }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 8)) ?? Data())
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        return byName
    }
}

/// Runs one operation per key at a time; callers that come while it runs wait for its result.
actor DownloadGate {
    private var running: [AttachmentFile: Task<URL, any Error>] = [:]

    func once(_ key: AttachmentFile, _ operation: @escaping @Sendable () async throws -> URL) async throws -> URL {
        if let task = running[key] { return try await task.value }
        let task = Task { try await operation() }
        running[key] = task
        defer { running[key] = nil }
        return try await task.value
    }
}
