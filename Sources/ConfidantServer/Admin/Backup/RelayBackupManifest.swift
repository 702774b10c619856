import Foundation

/// The `manifest.json` of a relay backup (`confidant admin backup`): the size and SHA-256 of
/// every file beside it, so that a restore proves each copy before it uses it. Written last: a
/// directory without one is a backup that did not finish.
public struct RelayBackupManifest: Codable, Sendable, Equatable {
    public static let fileName = "manifest.json"
    public static let databaseFileName = "relay.sqlite"
    public static let authKeyFileName = "auth.key"
    public static let blobDirectoryName = "blobs"
    /// The manifest's own format; a restore refuses any other.
    public static let currentFormat = 1

    /// One copied file.
    public struct File: Codable, Sendable, Equatable {
        public let size: Int64
        public let sha256: String
    }

    /// One blob (attachment or backup object), as `blobs/<id>` holds it.
    public struct Blob: Codable, Sendable, Equatable {
        public let id: UUID
        public let size: Int64
        public let sha256: String
    }

    public let format: Int
    public let createdAt: Date
    /// How many schema migrations the copied database has run: a build that knows fewer refuses it.
    public let migrations: Int
    public let database: File
    public let authKey: File
    public let blobs: [Blob]
    /// Blobs whose files went (fetched by everyone, expired or deleted) after the database was
    /// copied: their rows were taken out of the copy, as the live relay took them out.
    public let blobsGoneDuringBackup: Int

    /// The bytes of every blob.
    public var blobBytes: Int64 { blobs.reduce(0) { $0 + $1.size } }
}

/// Why a relay backup or restore stopped. Nothing it wrote is left half-made.
public enum RelayBackupError: Error, Equatable, CustomStringConvertible {
    /// The backup's directory exists and is not empty.
    case outputNotEmpty(String)
    /// The relay's database is PostgreSQL: `pg_dump` copies it (docs/OPERATIONS.md).
    case postgres
    /// The directory has no manifest, or one that cannot be read.
    case notABackup(String)
    /// A manifest of another format, or of a schema newer than this build.
    case unsupported(String)
    /// A file differs from what the manifest (or, for a live blob, the database) says.
    case damaged(String)
    /// The restore's target already holds a relay.
    case targetNotEmpty(String)
    /// The file system refused (full disk, permissions).
    case fileSystem(String)

    public var description: String {
        switch self {
        case .outputNotEmpty(let path):
            "\(path) exists and is not empty; give a new directory for the backup."
        case .postgres:
            "This relay keeps its data in PostgreSQL: back it up with pg_dump and copy the data directory's blobs and auth.key (docs/OPERATIONS.md, \"Backups of the server\")."
        case .notABackup(let path):
            "\(path) is not a finished relay backup (no readable \(RelayBackupManifest.fileName)); make one with `confidant admin backup --out DIR`."
        case .unsupported(let why): "This build cannot restore that backup: \(why)."
        case .damaged(let what): "The backup is damaged: \(what); nothing was restored."
        case .targetNotEmpty(let path):
            "\(path) exists already; restore into a new data directory (and database) so that nothing is overwritten."
        case .fileSystem(let why): "The file system refused: \(why)."
        }
    }
}
