import ConfidantCrypto
import Foundation

/// A chapter of the journal, decrypted.
public struct Chapter: Sendable, Hashable {
    public let id: UUID
    /// The chapter's title.
    public let title: String
    /// When the chapter was created.
    public let createdAt: Date
    /// How many memories it holds.
    public let itemCount: Int
}

/// One media file of an item's album, decrypted metadata.
public struct MediaFile: Sendable, Hashable {
    public let id: UUID
    /// The file's name as added.
    public let name: String
    /// Its content type (guessed from the name when added).
    public let contentType: String
    /// Its size in bytes, before encryption.
    public let size: Int
    /// The address of its encrypted object.
    public let objectHash: String
}

/// A memory: text and/or an album of media files.
public struct Item: Sendable, Hashable {
    public let id: UUID
    /// The chapter it is in.
    public let chapterID: UUID
    /// That chapter's title.
    public let chapterTitle: String
    /// When the memory is from.
    public let timestamp: Date
    /// What kind of memory it is: `text`, or `media` when it has files.
    public let kind: String
    /// Its text, if it has any.
    public let text: String?
    /// Its files, in the order they were added.
    public let media: [MediaFile]

    /// The short id shown to users (first 8 hex digits), accepted wherever an item is named.
    public var shortID: String { String(id.canonicalString.prefix(8)) }
}

/// Counts for `vault status`.
public struct VaultStatus: Sendable {
    /// How many chapters.
    public let chapters: Int
    /// How many memories.
    public let items: Int
    /// How many files.
    public let mediaFiles: Int
    /// Their total size before encryption.
    public let plaintextBytes: Int
    /// What the encrypted objects take on disk.
    public let objectBytes: Int
}

/// One problem `verify` found; verification goes on past it.
public struct VerificationProblem: Sendable, CustomStringConvertible {
    /// The memory (short id) or object.
    public let item: String
    /// What is wrong with it.
    public let reason: String
    public var description: String { "\(item): \(reason)" }
}
