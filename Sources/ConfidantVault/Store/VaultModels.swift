import ConfidantCrypto
import Foundation

/// A chapter of the journal, decrypted.
public struct Chapter: Sendable, Hashable {
    public let id: UUID
    public let title: String
    public let createdAt: Date
    public let itemCount: Int
}

/// One media file of an item's album, decrypted metadata.
public struct MediaFile: Sendable, Hashable {
    public let id: UUID
    public let name: String
    public let contentType: String
    public let size: Int
    public let objectHash: String
}

/// A memory: text and/or an album of media files.
public struct Item: Sendable, Hashable {
    public let id: UUID
    public let chapterID: UUID
    public let chapterTitle: String
    public let timestamp: Date
    public let kind: String
    public let text: String?
    public let media: [MediaFile]

    /// The short id shown to users (first 8 hex digits), accepted wherever an item is named.
    public var shortID: String { String(id.canonicalString.prefix(8)) }
}

/// Counts for `vault status`.
public struct VaultStatus: Sendable {
    public let chapters: Int
    public let items: Int
    public let mediaFiles: Int
    public let plaintextBytes: Int
    public let objectBytes: Int
}

/// One problem `verify` found; verification goes on past it.
public struct VerificationProblem: Sendable, CustomStringConvertible {
    public let item: String
    public let reason: String
    public var description: String { "\(item): \(reason)" }
}
