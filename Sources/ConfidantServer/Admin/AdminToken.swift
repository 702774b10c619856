import Crypto
import Foundation

/// The bearer token of the HTTP admin API, read from a file only its owner can read. The server
/// keeps its SHA-256 and compares digests: swift-crypto's digest equality is constant-time.
struct AdminToken: Sendable {
    /// The fewest characters a token file may hold (`confidant admin token` writes 43).
    static let minimumLength = 32

    let digest: SHA256.Digest

    /// Reads and checks the file `serve --admin-token-file` names.
    init(file: URL) throws {
        let path = file.path
        var info = stat()
        guard stat(path, &info) == 0 else { throw AdminTokenFileError.unreadable(path) }
        guard info.st_mode & (S_IRWXG | S_IRWXO) == 0 else { throw AdminTokenFileError.tooOpen(path) }
        guard let data = FileManager.default.contents(atPath: path), data.count <= 4_096,
            let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines)
        else { throw AdminTokenFileError.unreadable(path) }
        guard text.count >= Self.minimumLength, text.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 })
        else { throw AdminTokenFileError.tooShort(path) }
        digest = SHA256.hash(data: Data(text.utf8))
    }

    /// Whether `Authorization: Bearer …` carries the token.
    func admits(authorization header: String?) -> Bool {
        guard let header, header.utf8.count <= 4_200, let token = SessionToken.bearer(header) else { return false }
        return SHA256.hash(data: Data(token.utf8)) == digest
    }

    /// A new token: 256 random bits in base64url.
    static func generate() -> String { SessionToken.generate().text }
}

/// Why the admin token file was not taken.
public enum AdminTokenFileError: Error, Equatable, CustomStringConvertible {
    case unreadable(String)
    /// It exists already, or its folder cannot be written.
    case unwritable(String)
    /// Its group or others may read or write it.
    case tooOpen(String)
    case tooShort(String)

    public var description: String {
        switch self {
        case .unreadable(let path): "Cannot read the admin token file \(path)."
        case .unwritable(let path):
            "Cannot make the admin token file \(path): it exists already (remove it to replace the token) or its folder cannot be written."
        case .tooOpen(let path):
            "The admin token file \(path) may be read by others; make it the server's own (chmod 600 \(path))."
        case .tooShort(let path):
            "The admin token file \(path) holds no token of at least \(AdminToken.minimumLength) printable characters; make one with `confidant admin token --out \(path)`."
        }
    }
}

/// Making the file `serve --admin-token-file` reads.
public enum AdminTokenFile {
    /// Writes a new token to a new file `url` that only its owner may read (0600); refuses to
    /// overwrite one. Returns the token, for the operator's HTTP client.
    public static func create(at url: URL) throws -> String {
        let token = AdminToken.generate()
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw AdminTokenFileError.unwritable(url.path) }
        let bytes = Array((token + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == bytes.count else { throw AdminTokenFileError.unwritable(url.path) }
        return token
    }
}
