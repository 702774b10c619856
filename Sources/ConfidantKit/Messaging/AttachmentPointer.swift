import ConfidantVault
import Foundation

/// What a message carries for one attached file (docs/PROTOCOL.md §8): where the encrypted file
/// is on the relay, and everything needed to check and decrypt it. The relay stores only the
/// ciphertext; name, type, size and key travel inside the end-to-end encrypted message.
///
/// The file is encrypted with a fresh 32-byte key in the vault's media format (STREAM of
/// AES-256-GCM 64 KiB segments, §6) with `id` as the object id, so any size streams in constant
/// memory; `digest` is the SHA-256 of those encrypted bytes, checked before anything is decrypted.
public struct AttachmentPointer: Sendable, Hashable, Codable {
    /// The attachment's id: the media object id bound into the key.
    public let id: UUID
    /// The blob on the relay; nil until uploaded (never in a sent message).
    public var blobID: UUID?
    /// The capability that lets the recipient fetch the blob; only in the recipients' copies
    /// (the sender's own devices fetch as its owner).
    public var capability: String?
    /// The 32-byte media key.
    public let key: Data
    /// SHA-256 (hex) of the encrypted file.
    public let digest: String
    /// Plaintext bytes.
    public let size: Int
    /// `image/png`, `application/pdf`, … as the sender's device judged it.
    public let contentType: String
    /// The file's name, without directories.
    public let name: String
    /// A small picture (PNG or JPEG, at most ``maximumThumbnailBytes``) shown before the file is fetched.
    public var thumbnail: Data?

    /// The largest thumbnail a message carries.
    public static let maximumThumbnailBytes = 16 * 1024
    /// The longest file name kept (UTF-8 bytes).
    public static let maximumNameBytes = 255

    /// The size of the encrypted file on the relay.
    public var encryptedSize: Int { MediaStream.encryptedSize(plaintext: size) }

    init(
        id: UUID, blobID: UUID?, capability: String?, key: Data, digest: String, size: Int, contentType: String,
        name: String, thumbnail: Data?
    ) {
        self.id = id
        self.blobID = blobID
        self.capability = capability
        self.key = key
        self.digest = digest
        self.size = size
        self.contentType = contentType
        self.name = name
        self.thumbnail = thumbnail
    }

    private enum CodingKeys: String, CodingKey {
        case id
        case blobID = "blobId"
        case capability, key, digest, size, contentType, name, thumbnail
    }

    /// Reads the JSON a message carries, refusing values outside the documented bounds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        blobID = try container.decodeIfPresent(UUID.self, forKey: .blobID)
        capability = try container.decodeIfPresent(String.self, forKey: .capability)
        key = try container.decode(Data.self, forKey: .key)
        digest = try container.decode(String.self, forKey: .digest)
        size = try container.decode(Int.self, forKey: .size)
        contentType = try container.decode(String.self, forKey: .contentType)
        name = try container.decode(String.self, forKey: .name)
        thumbnail = try container.decodeIfPresent(Data.self, forKey: .thumbnail)
        func invalid(_ why: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: container.codingPath, debugDescription: why))
        }
        guard key.count == 32 else { throw invalid("an attachment key must be 32 bytes") }
        guard digest.count == 64, digest.allSatisfy(\.isHexDigit) else {
            throw invalid("the digest is not SHA-256 hex")
        }
        guard size >= 0, size <= 1 << 40 else { throw invalid("an attachment of \(size) bytes") }
        guard contentType.utf8.count <= 127, !contentType.contains(where: \.isNewline) else {
            throw invalid("the content type is too long")
        }
        guard (1...Self.maximumNameBytes).contains(name.utf8.count) else {
            throw invalid("the name is empty or too long")
        }
        guard (thumbnail?.count ?? 0) <= Self.maximumThumbnailBytes else { throw invalid("the thumbnail is too large") }
        guard (capability?.utf8.count ?? 0) <= 256 else { throw invalid("the capability is too long") }
    }

    /// Writes the JSON the message carries (docs/PROTOCOL.md §8); empty and absent fields are left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(blobID, forKey: .blobID)
        try container.encodeIfPresent(capability, forKey: .capability)
        try container.encode(key, forKey: .key)
        try container.encode(digest, forKey: .digest)
        try container.encode(size, forKey: .size)
        try container.encode(contentType, forKey: .contentType)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(thumbnail, forKey: .thumbnail)
    }

    /// A name that is safe as a file name here: the last path component, no control characters
    /// or leading dots, never empty.
    public var safeFileName: String {
        let last = name.split(separator: "/").last.map(String.init) ?? ""
        let cleaned = String(
            last.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) && $0 != "\\" }
                .map(Character.init)
        ).drop { $0 == "." }
        return cleaned.isEmpty ? "attachment-\(id.canonicalString.prefix(8))" : String(cleaned)
    }
}

/// One attached file as a screen shows it.
public struct ChatAttachment: Sendable, Hashable, Identifiable {
    /// The attachment's id.
    public let id: UUID
    /// Its position in the message (0-based).
    public let index: Int
    /// The file's name.
    public let name: String
    /// Plaintext bytes.
    public let size: Int
    /// The content type the sender gave.
    public let contentType: String
    /// A small preview picture, when the sender included one.
    public let thumbnail: Data?
    /// Whether this device has the encrypted file already (no download needed to open it).
    public let isLocal: Bool

    /// Whether it is a picture a screen can show inline.
    public var isImage: Bool { contentType == "image/png" || contentType == "image/jpeg" || contentType == "image/gif" }
}
