import ConfidantCrypto
import Crypto
import Foundation

/// Streaming authenticated encryption of media files: the STREAM construction (Hoang,
/// Reyhanitabar, Rogaway, Vizár 2015) as age uses it, with AES-256-GCM and 64 KiB segments,
/// so a file of any size is encrypted and decrypted in constant memory.
///
/// ```
/// header  = "CFVM" | u8 version=1 | u32 segment size | 16 salt                       (25 bytes)
/// key     = HKDF-SHA256(vault key, salt = salt ‖ object id, info = "Confidant vault media v1")
/// segment i (from 0) = AES-256-GCM(key, nonce = u88 i ‖ u8 last, aad = header, plaintext[i]) ‖ 16-byte tag
/// ```
/// Every segment but the last holds exactly `segment size` bytes; the last is flagged, so
/// truncation at a segment boundary is detected; the counter in the nonce detects reordering;
/// the object id in the key means a file cannot be swapped for another item's.
public enum MediaStream {
    /// Plaintext bytes per segment.
    public static let segmentSize = 65_536
    static let magic = Array("CFVM".utf8)
    /// The stream header's size in bytes.
    public static let headerCount = 25
    /// The AES-GCM tag's size after each segment.
    public static let tagCount = 16

    /// Ciphertext size for a plaintext size.
    public static func encryptedSize(plaintext: Int) -> Int {
        let segments = max(1, (plaintext + segmentSize - 1) / segmentSize)
        return headerCount + plaintext + segments * tagCount
    }

    static func nonce(_ index: UInt64, last: Bool) throws -> AES.GCM.Nonce {
        var bytes = [UInt8](repeating: 0, count: 3)
        bytes.appendBigEndian(index)
        bytes.append(last ? 1 : 0)
        return try AES.GCM.Nonce(data: bytes)
    }

    static func key(_ vaultKey: VaultKey, salt: [UInt8], objectID: UUID) -> SymmetricKey {
        var material = salt
        Swift.withUnsafeBytes(of: objectID.uuid) { material.append(contentsOf: $0) }
        return vaultKey.derived("media", salt: material)
    }

    /// Encrypts everything `read` yields until it returns an empty chunk.
    /// - Parameters:
    ///   - vaultKey: the vault's key; the stream's key is derived from it, a salt and the object id.
    ///   - objectID: the media file's id, bound into the key.
    ///   - read: returns up to the requested number of bytes; empty at the end.
    ///   - write: receives the header, then each sealed segment.
    ///   - address: receives the header and each segment's tag, for the ``ObjectAddress``.
    /// - Returns: the number of plaintext bytes.
    @discardableResult
    public static func encrypt(
        key vaultKey: VaultKey, objectID: UUID,
        read: (Int) throws -> Data, write: (Data) throws -> Void, address: (Data) -> Void = { _ in }
    ) throws -> Int {
        var header = magic + [1]
        header.appendBigEndian(UInt32(segmentSize))
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        header += salt
        let key = key(vaultKey, salt: salt, objectID: objectID)
        address(Data(header))
        try write(Data(header))
        var current = try read(segmentSize)
        var index: UInt64 = 0
        var total = 0
        while true {
            let next = current.count == segmentSize ? try read(segmentSize) : Data()
            let last = next.isEmpty
            let box = try AES.GCM.seal(current, using: key, nonce: nonce(index, last: last), authenticating: header)
            // Ciphertext and tag go out as two writes: no concatenated copy of each segment.
            try write(box.ciphertext)
            try write(box.tag)
            address(box.tag)
            total += current.count
            if last { return total }
            current = next
            index += 1
        }
    }

    /// Decrypts and authenticates a stream, passing each verified segment to `write`.
    ///
    /// A failure is reported with the 1-based segment number; segments before it have already
    /// been written, so callers writing files must write to a temporary file and discard it on error.
    /// - Parameters:
    ///   - vaultKey: the vault's key.
    ///   - objectID: the media file's id it was encrypted for.
    ///   - name: the item's name, used in error messages.
    ///   - read: returns up to the requested number of bytes; empty at the end.
    ///   - write: receives each verified segment's plaintext, in order.
    /// - Returns: the number of plaintext bytes.
    @discardableResult
    public static func decrypt(
        key vaultKey: VaultKey, objectID: UUID, name: String,
        read: (Int) throws -> Data, write: (Data) throws -> Void
    ) throws -> Int {
        let header = [UInt8](try read(headerCount))
        guard header.count == headerCount, Array(header[0..<4]) == magic else {
            throw VaultError.corrupted("\(name): not an encrypted vault object")
        }
        guard header[4] == 1 else {
            throw VaultError.corrupted("\(name): object format version \(header[4]) is unknown")
        }
        let declared = header[5..<9].reduce(0) { $0 << 8 | Int($1) }
        guard declared == segmentSize else {
            throw VaultError.corrupted("\(name): unsupported segment size \(declared)")
        }
        let key = key(vaultKey, salt: Array(header[9..<25]), objectID: objectID)
        let sealedSize = segmentSize + tagCount
        var current = try read(sealedSize)
        guard !current.isEmpty else { throw VaultError.truncated(item: name, afterSegment: 0) }
        var index: UInt64 = 0
        var total = 0
        while true {
            let next = current.count == sealedSize ? try read(sealedSize) : Data()
            let last = next.isEmpty
            guard let plain = try? openSegment(current, key: key, index: index, last: last, header: header) else {
                // Tell truncation and trailing data apart from tampering by trying the other flag.
                if (try? openSegment(current, key: key, index: index, last: !last, header: header)) != nil {
                    if last { throw VaultError.truncated(item: name, afterSegment: Int(index) + 1) }
                    throw VaultError.trailingData(item: name)
                }
                throw VaultError.tampered(item: name, segment: Int(index) + 1)
            }
            // One file, one encoding (as age rules): only an empty file ends in an empty segment.
            if last, plain.isEmpty, index > 0 {
                throw VaultError.corrupted("\(name): an empty final segment after full ones")
            }
            try write(plain)
            total += plain.count
            if last { return total }
            current = next
            index += 1
        }
    }

    private static func openSegment(_ sealed: Data, key: SymmetricKey, index: UInt64, last: Bool, header: [UInt8])
        throws -> Data
    {
        guard sealed.count >= tagCount else { throw VaultError.corrupted("segment shorter than its tag") }
        let box = try AES.GCM.SealedBox(
            nonce: nonce(index, last: last), ciphertext: sealed.dropLast(tagCount), tag: sealed.suffix(tagCount))
        return try AES.GCM.open(box, using: key, authenticating: header)
    }
}

extension MediaStream {
    /// Encrypts a file into another in one pass and constant memory. The output appears only when complete.
    /// - Returns: the plaintext size and the object's ``ObjectAddress``.
    @discardableResult
    public static func encryptFile(
        at source: URL, to destination: URL, key: VaultKey, objectID: UUID, progress: (Int) -> Void = { _ in }
    ) throws -> (size: Int, address: String) {
        let result = try encryptFile(
            at: source, to: destination, key: key, objectID: objectID, digesting: false, progress: progress)
        return (result.size, result.address)
    }

    /// Encrypts a file into another, as above, and also hashes the encrypted bytes as they are
    /// written (an attachment's SHA-256 digest), in the same pass.
    /// - Returns: the plaintext size, the ``ObjectAddress`` and the SHA-256 (hex) of the output.
    public static func encryptFileDigesting(
        at source: URL, to destination: URL, key: VaultKey, objectID: UUID, progress: (Int) -> Void = { _ in }
    ) throws -> (size: Int, address: String, sha256: String) {
        let result = try encryptFile(
            at: source, to: destination, key: key, objectID: objectID, digesting: true, progress: progress)
        return (result.size, result.address, result.sha256 ?? "")
    }

    private static func encryptFile(
        at source: URL, to destination: URL, key: VaultKey, objectID: UUID, digesting: Bool,
        progress: (Int) -> Void
    ) throws -> (size: Int, address: String, sha256: String?) {
        var address = ObjectAddress()
        var hasher = digesting ? SHA256() : nil
        let size = try streamFile(from: source, to: destination) { input, output in
            var done = 0
            // Segment-sized reads straight from the file (no staging copy); the ciphertext goes
            // out in batches of about 1 MiB — one writev per 16 segments, not copied together —
            // on a second thread while the next segments seal.
            let writer = PipelinedFileWriter(output: output)
            // On failure the output is closed and removed: the writer must be done with it first.
            defer { writer.discard() }
            let count = try encrypt(
                key: key, objectID: objectID,
                read: { count in
                    let chunk = try input.readWhole(upToCount: count)
                    done += chunk.count
                    progress(done)
                    return chunk
                },
                write: { data in
                    hasher?.update(data: data)
                    try writer.append(data)
                }, address: { address.add($0) })
            try writer.finish()
            return count
        }
        return (size, address.finalize(), hasher.map { $0.finalize().hexString })
    }

    /// Decrypts and authenticates a whole object without keeping the plaintext; the size it decrypts to.
    public static func authenticate(file url: URL, key: VaultKey, objectID: UUID, name: String) throws -> Int {
        guard let handle = try? FileHandle(forReadingFrom: url) else { throw VaultError.io("cannot read \(url.path)") }
        defer { try? handle.close() }
        return try decrypt(
            key: key, objectID: objectID, name: name, read: { try handle.readWhole(upToCount: $0) },
            write: { _ in })
    }

    /// Decrypts a file into another, in constant memory; nothing is left at `destination` on failure.
    @discardableResult
    public static func decryptFile(
        at source: URL, to destination: URL, key: VaultKey, objectID: UUID, name: String,
        progress: (Int) -> Void = { _ in }
    ) throws -> Int {
        try streamFile(from: source, to: destination) { input, output in
            var done = 0
            // Segment-sized reads straight from the file (no staging copy); the plaintext goes out
            // in batches of about 1 MiB, written on a second thread while the next segments decrypt.
            let writer = PipelinedFileWriter(output: output)
            defer { writer.discard() }
            let count = try decrypt(
                key: key, objectID: objectID, name: name, read: { try input.readWhole(upToCount: $0) },
                write: {
                    try writer.append($0)
                    done += $0.count
                    progress(done)
                })
            try writer.finish()
            return count
        }
    }

    private static func streamFile(
        from source: URL, to destination: URL, _ body: (FileHandle, FileHandle) throws -> Int
    ) throws -> Int {
        guard let input = try? FileHandle(forReadingFrom: source) else {
            throw VaultError.io("cannot read \(source.path)")
        }
        defer { try? input.close() }
        let temporary = destination.deletingLastPathComponent().appendingPathComponent(
            ".\(destination.lastPathComponent).partial-\(UUID().uuidString)")
        guard
            FileManager.default.createFile(
                atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let output = try? FileHandle(forWritingTo: temporary)
        else { throw VaultError.io("cannot write \(destination.path)") }
        do {
            let count = try body(input, output)
            try output.synchronize()
            try output.close()
            if FileManager.default.fileExists(atPath: destination.path) {
                try FileManager.default.removeItem(at: destination)
            }
            try FileManager.default.moveItem(at: temporary, to: destination)
            return count
        } catch {
            try? output.close()
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }
}

/// The name of an encrypted object in the store and in backups: SHA-256 over
/// `"Confidant vault object v1\0"`, the 25-byte header and every segment's 16-byte tag, in hex.
///
/// Hashing the tags instead of the whole ciphertext makes naming almost free (16 bytes per
/// 64 KiB), which by profile was a third of the CPU time of encrypting a file. The name still
/// pins the object: the header carries a random salt, and the AES-GCM tags commit to the
/// ciphertext under a key only the vault's owner has, so a changed byte anywhere fails either
/// the name or decryption — restore therefore checks both.
public struct ObjectAddress: Sendable {
    private static let domain = Data("Confidant vault object v1\0".utf8)
    private var hasher = SHA256()

    /// An empty address computation.
    public init() { hasher.update(data: Self.domain) }

    /// Adds the next bytes of the ciphertext.
    public mutating func add(_ bytes: Data) { hasher.update(data: bytes) }

    /// The address: lowercase hex of the SHA-256.
    public func finalize() -> String { hasher.finalize().hexString }

    /// The address of a stored object, read from its header and tags.
    public static func of(file url: URL) throws -> String {
        guard let handle = try? FileHandle(forReadingFrom: url) else { throw VaultError.io("cannot read \(url.path)") }
        defer { try? handle.close() }
        var address = ObjectAddress()
        let header = try handle.readWhole(upToCount: MediaStream.headerCount)
        guard header.count == MediaStream.headerCount else {
            throw VaultError.corrupted("\(url.lastPathComponent): shorter than its header")
        }
        address.add(header)
        while true {
            let segment = try handle.readWhole(upToCount: MediaStream.segmentSize + MediaStream.tagCount)
            if segment.isEmpty { break }
            guard segment.count >= MediaStream.tagCount else {
                throw VaultError.corrupted("\(url.lastPathComponent): a segment is shorter than its tag")
            }
            address.add(segment.suffix(MediaStream.tagCount))
        }
        return address.finalize()
    }
}
