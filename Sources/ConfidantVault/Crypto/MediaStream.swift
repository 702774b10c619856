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
    public static let segmentSize = 65_536
    static let magic = Array("CFVM".utf8)
    public static let headerCount = 25
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
    ///   - read: returns up to the requested number of bytes; empty at the end.
    ///   - write: receives the header, then each sealed segment.
    /// - Returns: the number of plaintext bytes.
    @discardableResult
    public static func encrypt(
        key vaultKey: VaultKey, objectID: UUID,
        read: (Int) throws -> [UInt8], write: ([UInt8]) throws -> Void
    ) throws -> Int {
        var header = magic + [1]
        header.appendBigEndian(UInt32(segmentSize))
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        header += salt
        let key = key(vaultKey, salt: salt, objectID: objectID)
        try write(header)
        var current = try read(segmentSize)
        var index: UInt64 = 0
        var total = 0
        while true {
            let next = current.count == segmentSize ? try read(segmentSize) : []
            let last = next.isEmpty
            let box = try AES.GCM.seal(current, using: key, nonce: nonce(index, last: last), authenticating: header)
            try write(Array(box.ciphertext) + Array(box.tag))
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
    /// - Parameter name: the item's name, used in error messages.
    @discardableResult
    public static func decrypt(
        key vaultKey: VaultKey, objectID: UUID, name: String,
        read: (Int) throws -> [UInt8], write: ([UInt8]) throws -> Void
    ) throws -> Int {
        let header = try read(headerCount)
        guard header.count == headerCount, Array(header[0..<4]) == magic else {
            throw VaultError.corrupted("\(name): not an encrypted vault object")
        }
        guard header[4] == 1 else { throw VaultError.corrupted("\(name): object format version \(header[4]) is unknown") }
        let declared = header[5..<9].reduce(0) { $0 << 8 | Int($1) }
        guard declared == segmentSize else { throw VaultError.corrupted("\(name): unsupported segment size \(declared)") }
        let key = key(vaultKey, salt: Array(header[9..<25]), objectID: objectID)
        let sealedSize = segmentSize + tagCount
        var current = try read(sealedSize)
        guard !current.isEmpty else { throw VaultError.truncated(item: name, afterSegment: 0) }
        var index: UInt64 = 0
        var total = 0
        while true {
            let next = current.count == sealedSize ? try read(sealedSize) : []
            let last = next.isEmpty
            guard let plain = try? openSegment(current, key: key, index: index, last: last, header: header) else {
                // Tell truncation and trailing data apart from tampering by trying the other flag.
                if (try? openSegment(current, key: key, index: index, last: !last, header: header)) != nil {
                    if last { throw VaultError.truncated(item: name, afterSegment: Int(index) + 1) }
                    throw VaultError.trailingData(item: name)
                }
                throw VaultError.tampered(item: name, segment: Int(index) + 1)
            }
            try write(plain)
            total += plain.count
            if last { return total }
            current = next
            index += 1
        }
    }

    private static func openSegment(_ sealed: [UInt8], key: SymmetricKey, index: UInt64, last: Bool, header: [UInt8]) throws -> [UInt8] {
        guard sealed.count >= tagCount else { throw VaultError.corrupted("segment shorter than its tag") }
        let box = try AES.GCM.SealedBox(
            nonce: nonce(index, last: last), ciphertext: sealed.dropLast(tagCount), tag: sealed.suffix(tagCount))
        return Array(try AES.GCM.open(box, using: key, authenticating: header))
    }
}

extension MediaStream {
    /// Encrypts a file into another, in constant memory. The output is written to a temporary
    /// file and renamed into place only when complete.
    @discardableResult
    public static func encryptFile(at source: URL, to destination: URL, key: VaultKey, objectID: UUID, progress: (Int) -> Void = { _ in }) throws -> Int {
        try streamFile(from: source, to: destination) { input, output in
            var done = 0
            return try encrypt(key: key, objectID: objectID, read: { count in
                let chunk = [UInt8](try input.read(upToCount: count) ?? Data())
                done += chunk.count
                progress(done)
                return chunk
            }, write: { try output.write(contentsOf: $0) })
        }
    }

    /// Decrypts a file into another, in constant memory; nothing is left at `destination` on failure.
    @discardableResult
    public static func decryptFile(at source: URL, to destination: URL, key: VaultKey, objectID: UUID, name: String, progress: (Int) -> Void = { _ in }) throws -> Int {
        try streamFile(from: source, to: destination) { input, output in
            var done = 0
            return try decrypt(key: key, objectID: objectID, name: name, read: { count in
                [UInt8](try input.read(upToCount: count) ?? Data())
            }, write: {
                try output.write(contentsOf: $0)
                done += $0.count
                progress(done)
            })
        }
    }

    private static func streamFile(from source: URL, to destination: URL, _ body: (FileHandle, FileHandle) throws -> Int) throws -> Int {
        guard let input = try? FileHandle(forReadingFrom: source) else { throw VaultError.io("cannot read \(source.path)") }
        defer { try? input.close() }
        let temporary = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).partial-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let output = try? FileHandle(forWritingTo: temporary)
        else { throw VaultError.io("cannot write \(destination.path)") }
        do {
            let count = try body(input, output)
            try output.synchronize()
            try output.close()
            if FileManager.default.fileExists(atPath: destination.path) { try FileManager.default.removeItem(at: destination) }
            try FileManager.default.moveItem(at: temporary, to: destination)
            return count
        } catch {
            try? output.close()
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }
}
