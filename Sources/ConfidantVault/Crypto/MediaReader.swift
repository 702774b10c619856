import ConfidantCrypto
import Crypto
import Foundation

/// Random access to an encrypted media object: any byte range of the plaintext, decrypting only
/// the 64 KiB segments the range touches (what a video player's HTTP range requests need), in
/// memory proportional to the range and nothing decrypted on disk. Every segment read is
/// authenticated with its index and, for the object's final segment, the last flag, so a range
/// reader detects tampering, reordering and truncation just as a full decryption does.
///
/// Segment i starts at byte `25 + i · (65,536 + 16)` of the object (docs/PROTOCOL.md, the vault).
public struct MediaReader: Sendable {
    /// The plaintext's size in bytes.
    public let size: Int
    private let url: URL
    private let key: SymmetricKey
    private let header: [UInt8]
    private let segmentCount: Int
    private let lastSealedCount: Int
    private let name: String

    /// Opens the object at `url` and checks its header.
    /// - Parameters:
    ///   - url: the encrypted object.
    ///   - vaultKey: the vault's key.
    ///   - objectID: the media file's id, bound into the stream's key.
    ///   - name: the file's name, for error messages.
    /// - Throws: `VaultError.corrupted` or `.truncated` for an object that cannot be this format.
    public init(url: URL, key vaultKey: VaultKey, objectID: UUID, name: String) throws {
        let handle = try Self.open(url)
        defer { try? handle.close() }
        let fileSize = Int(try handle.seekToEnd())
        try handle.seek(toOffset: 0)
        let header = [UInt8](try handle.readWhole(upToCount: MediaStream.headerCount))
        guard header.count == MediaStream.headerCount, Array(header[0..<4]) == MediaStream.magic else {
            throw VaultError.corrupted("\(name): not an encrypted vault object")
        }
        guard header[4] == 1, header[5..<9].reduce(0, { $0 << 8 | Int($1) }) == MediaStream.segmentSize else {
            throw VaultError.corrupted("\(name): unsupported object format")
        }
        let sealed = MediaStream.segmentSize + MediaStream.tagCount
        let body = fileSize - MediaStream.headerCount
        guard body >= MediaStream.tagCount else { throw VaultError.truncated(item: name, afterSegment: 0) }
        segmentCount = (body + sealed - 1) / sealed
        lastSealedCount = body - (segmentCount - 1) * sealed
        guard lastSealedCount >= MediaStream.tagCount else {
            throw VaultError.truncated(item: name, afterSegment: segmentCount - 1)
        }
        guard segmentCount == 1 || lastSealedCount > MediaStream.tagCount else {
            throw VaultError.corrupted("\(name): an empty final segment after full ones")
        }
        size = body - segmentCount * MediaStream.tagCount
        self.url = url
        self.header = header
        self.name = name
        key = MediaStream.key(vaultKey, salt: Array(header[9..<25]), objectID: objectID)
    }

    /// The plaintext bytes in `range`, which must lie within `0..<size`.
    /// - Throws: `VaultError.tampered` or `.truncated` when a segment does not authenticate;
    ///   `.io` for a range outside the object.
    public func read(_ range: Range<Int>) throws -> Data {
        guard range.lowerBound >= 0, range.upperBound <= size else {
            throw VaultError.io("\(name): bytes \(range) are outside the file's \(size) bytes")
        }
        guard !range.isEmpty else { return Data() }
        let handle = try Self.open(url)
        defer { try? handle.close() }
        var result = Data(capacity: range.count)
        var index = range.lowerBound / MediaStream.segmentSize
        while index * MediaStream.segmentSize < range.upperBound {
            let plain = try segment(index, from: handle)
            let start = index * MediaStream.segmentSize
            let from = max(range.lowerBound, start) - start
            let to = min(range.upperBound, start + plain.count) - start
            result.append(plain[plain.startIndex + from..<plain.startIndex + to])
            index += 1
        }
        return result
    }

    private func segment(_ index: Int, from handle: FileHandle) throws -> Data {
        let last = index == segmentCount - 1
        let sealedCount = last ? lastSealedCount : MediaStream.segmentSize + MediaStream.tagCount
        try handle.seek(
            toOffset: UInt64(MediaStream.headerCount + index * (MediaStream.segmentSize + MediaStream.tagCount)))
        let sealed = try handle.readWhole(upToCount: sealedCount)
        guard sealed.count == sealedCount else { throw VaultError.truncated(item: name, afterSegment: index) }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: MediaStream.nonce(UInt64(index), last: last), ciphertext: sealed.dropLast(MediaStream.tagCount),
                tag: sealed.suffix(MediaStream.tagCount))
            return try AES.GCM.open(box, using: key, authenticating: header)
        } catch {
            // The file's final segment that opens only without the last flag: the rest was cut off.
            if last,
                let box = try? AES.GCM.SealedBox(
                    nonce: MediaStream.nonce(UInt64(index), last: false),
                    ciphertext: sealed.dropLast(MediaStream.tagCount),
                    tag: sealed.suffix(MediaStream.tagCount)),
                (try? AES.GCM.open(box, using: key, authenticating: header)) != nil
            {
                throw VaultError.truncated(item: name, afterSegment: index + 1)
            }
            throw VaultError.tampered(item: name, segment: index + 1)
        }
    }

    private static func open(_ url: URL) throws -> FileHandle {
        do {
            return try FileHandle(forReadingFrom: url)
        } catch {
            throw VaultError.io("cannot read \(url.lastPathComponent): \(error.localizedDescription)")
        }
    }
}

extension Vault {
    /// A random-access reader of one of the vault's media files.
    /// - Throws: `VaultError.corrupted` when the object's size disagrees with the catalogue.
    public func mediaReader(for media: MediaFile) throws -> MediaReader {
        let reader = try MediaReader(url: objectURL(media.objectHash), key: key, objectID: media.id, name: media.name)
        guard reader.size == media.size else {
            throw VaultError.corrupted(
                "\(media.name): the object holds \(reader.size) bytes, the catalogue says \(media.size)")
        }
        return reader
    }
}
