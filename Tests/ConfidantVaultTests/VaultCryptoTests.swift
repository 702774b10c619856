import ConfidantCrypto
import Crypto
import Foundation
import Testing

@testable import ConfidantVault

func encryptBytes(_ plain: [UInt8], key: VaultKey, id: UUID) throws -> [UInt8] {
    var offset = 0
    var out: [UInt8] = []
    try MediaStream.encrypt(
        key: key, objectID: id,
        read: { count in
            defer { offset = min(plain.count, offset + count) }
            return Data(plain[offset..<min(plain.count, offset + count)])
        }, write: { out += $0 })
    return out
}

func decryptBytes(_ sealed: [UInt8], key: VaultKey, id: UUID, name: String = "photo.jpg") throws -> [UInt8] {
    var offset = 0
    var out: [UInt8] = []
    try MediaStream.decrypt(
        key: key, objectID: id, name: name,
        read: { count in
            defer { offset = min(sealed.count, offset + count) }
            return Data(sealed[offset..<min(sealed.count, offset + count)])
        }, write: { out += $0 })
    return out
}

@Suite struct MediaStreamTests {
    let key = VaultKey.generate()
    let id = UUID()

    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 3 * 65_536, 5_000_000])
    func roundTrip(size: Int) throws {
        let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let sealed = try encryptBytes(plain, key: key, id: id)
        #expect(sealed.count == MediaStream.encryptedSize(plaintext: size))
        #expect(try decryptBytes(sealed, key: key, id: id) == plain)
    }

    @Test func tamperedSegmentIsNamed() throws {
        var sealed = try encryptBytes([UInt8](repeating: 1, count: 200_000), key: key, id: id)
        sealed[MediaStream.headerCount + 65_552 + 10] ^= 1  // inside segment 2
        #expect(throws: VaultError.tampered(item: "photo.jpg", segment: 2)) {
            try decryptBytes(sealed, key: key, id: id)
        }
    }

    @Test func truncationAtASegmentBoundaryIsDetected() throws {
        let sealed = try encryptBytes([UInt8](repeating: 2, count: 200_000), key: key, id: id)
        let cut = Array(sealed.prefix(MediaStream.headerCount + 2 * 65_552))
        #expect(throws: VaultError.truncated(item: "photo.jpg", afterSegment: 2)) {
            try decryptBytes(cut, key: key, id: id)
        }
        #expect(throws: VaultError.truncated(item: "photo.jpg", afterSegment: 0)) {
            try decryptBytes(Array(sealed.prefix(MediaStream.headerCount)), key: key, id: id)
        }
        #expect(throws: VaultError.self) { try decryptBytes(Array(sealed.dropLast(5)), key: key, id: id) }
    }

    @Test func reorderedSegmentsAreDetected() throws {
        let sealed = try encryptBytes((0..<200_000).map { UInt8(truncatingIfNeeded: $0) }, key: key, id: id)
        let h = MediaStream.headerCount
        let s = 65_552
        let swapped =
            Array(sealed[0..<h]) + Array(sealed[(h + s)..<(h + 2 * s)]) + Array(sealed[h..<(h + s)])
            + Array(sealed[(h + 2 * s)...])
        #expect(throws: VaultError.tampered(item: "photo.jpg", segment: 1)) {
            try decryptBytes(swapped, key: key, id: id)
        }
    }

    @Test func trailingDataAfterTheFinalSegment() throws {
        let a = try encryptBytes([UInt8](repeating: 3, count: 65_536), key: key, id: id)
        // A second copy of the only (final) segment appended: segment 1 is now not last.
        let extended = a + Array(a[MediaStream.headerCount...])
        #expect(throws: VaultError.trailingData(item: "photo.jpg")) { try decryptBytes(extended, key: key, id: id) }
    }

    @Test func objectsCannotBeSwappedBetweenItemsOrVaults() throws {
        let sealed = try encryptBytes([1, 2, 3], key: key, id: id)
        #expect(throws: VaultError.tampered(item: "photo.jpg", segment: 1)) {
            try decryptBytes(sealed, key: key, id: UUID())
        }
        #expect(throws: VaultError.tampered(item: "photo.jpg", segment: 1)) {
            try decryptBytes(sealed, key: .generate(), id: id)
        }
    }

    @Test(
        "a full final segment is the only encoding of a file of whole segments: an empty final one after it is refused")
    func emptyFinalSegmentAfterFullOnes() throws {
        let plain = [UInt8](repeating: 9, count: 65_536)
        let sealed = try encryptBytes(plain, key: key, id: id)
        #expect(sealed.count == MediaStream.encryptedSize(plaintext: plain.count))
        #expect(try decryptBytes(sealed, key: key, id: id) == plain)
        // The same bytes as a full segment not flagged last, then an empty flagged one.
        let header = Array(sealed[0..<25])
        let segmentKey = MediaStream.key(key, salt: Array(header[9..<25]), objectID: id)
        let full = try AES.GCM.seal(
            plain, using: segmentKey, nonce: MediaStream.nonce(0, last: false), authenticating: header)
        let empty = try AES.GCM.seal(
            [UInt8](), using: segmentKey, nonce: MediaStream.nonce(1, last: true), authenticating: header)
        let other = header + Array(full.ciphertext) + Array(full.tag) + Array(empty.tag)
        #expect(throws: VaultError.corrupted("photo.jpg: an empty final segment after full ones")) {
            try decryptBytes(other, key: key, id: id)
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-seg-\(UUID())")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(other).write(to: url)
        #expect(throws: VaultError.corrupted("photo.jpg: an empty final segment after full ones")) {
            try MediaReader(url: url, key: key, objectID: id, name: "photo.jpg")
        }
        // An empty file is one empty, flagged segment.
        #expect(try decryptBytes(try encryptBytes([], key: key, id: id), key: key, id: id) == [])
    }

    @Test func garbageIsNotAnObject() {
        #expect(throws: VaultError.corrupted("photo.jpg: not an encrypted vault object")) {
            try decryptBytes(Array("hello".utf8), key: key, id: id)
        }
    }

    @Test func objectAddressKnownAnswer() {
        var address = ObjectAddress()
        address.add(Data(0..<25))
        address.add(Data(repeating: 0xAA, count: 16))
        // python3: hashlib.sha256(b"Confidant vault object v1\x00" + bytes(range(25)) + bytes([0xaa] * 16)).hexdigest()
        #expect(address.finalize() == "a8a24abee9a3bb97846fc4a14dd4a7e1af4058fd2f2d84b0a16468e006cf96a6")
    }

    @Test func objectAddressCoversHeaderAndEveryTag() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vault-address-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = directory.appendingPathComponent("in.bin")
        let sealed = directory.appendingPathComponent("obj")
        try Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) }).write(
            to: sealed.deletingLastPathComponent().appendingPathComponent("in.bin"))
        let (_, address) = try MediaStream.encryptFile(at: plain, to: sealed, key: key, objectID: id)
        #expect(try ObjectAddress.of(file: sealed) == address)
        let original = try Data(contentsOf: sealed)
        // A changed tag (the last 16 bytes) or header byte changes the address.
        for offset in [original.count - 1, 10] {
            var damaged = original
            damaged[offset] ^= 0x01
            try damaged.write(to: sealed)
            #expect(try ObjectAddress.of(file: sealed) != address)
        }
        // A changed ciphertext byte keeps the address but fails authentication.
        var damaged = original
        damaged[1_000] ^= 0x01
        try damaged.write(to: sealed)
        #expect(try ObjectAddress.of(file: sealed) == address)
        #expect(throws: VaultError.tampered(item: "obj", segment: 1)) {
            try MediaStream.authenticate(file: sealed, key: key, objectID: id, name: "obj")
        }
    }

    @Test("the digest taken while encrypting is the SHA-256 of the file written")
    func digestWhileEncrypting() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-digest-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("in")
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: source)
        let out = directory.appendingPathComponent("out")
        let (size, address, digest) = try MediaStream.encryptFileDigesting(at: source, to: out, key: key, objectID: id)
        #expect(size == 300_000)
        #expect(digest == SHA256.hash(data: try Data(contentsOf: out)).map { String(format: "%02x", $0) }.joined())
        #expect(address == (try ObjectAddress.of(file: out)))
    }

    @Test func filesStreamAndLeaveNothingOnFailure() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vault-stream-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = directory.appendingPathComponent("in.bin")
        let sealed = directory.appendingPathComponent("obj")
        let out = directory.appendingPathComponent("out.bin")
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 13) }
        try Data(bytes).write(to: plain)
        try MediaStream.encryptFile(at: plain, to: sealed, key: key, objectID: id)
        try MediaStream.decryptFile(at: sealed, to: out, key: key, objectID: id, name: "in.bin")
        #expect(try Data(contentsOf: out) == Data(bytes))
        var damaged = try Data(contentsOf: sealed)
        damaged[damaged.count - 100] ^= 0xFF
        try damaged.write(to: sealed)
        try FileManager.default.removeItem(at: out)
        #expect(throws: VaultError.tampered(item: "in.bin", segment: 5)) {
            try MediaStream.decryptFile(at: sealed, to: out, key: key, objectID: id, name: "in.bin")
        }
        #expect(!FileManager.default.fileExists(atPath: out.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["in.bin", "obj"])
    }
}

@Suite struct VaultKeyTests {
    @Test func wrapUnwrapAndRewrap() throws {
        let key = VaultKey.generate()
        let wrapped = try key.wrapped(passphrase: "first", parameters: .testing)
        #expect(wrapped.count == VaultKey.wrappedCount)
        let text = try SealedText.seal(
            "dear diary", itemID: UUID(uuidString: "00000000-0000-0000-0000-000000000001") ?? UUID(), field: "text",
            key: key)
        let unwrapped = try VaultKey.unwrap(wrapped, passphrase: "first")
        // Changing the passphrase re-wraps the same key: old ciphertexts still open.
        let rewrapped = try unwrapped.wrapped(passphrase: "second", parameters: .testing)
        let again = try VaultKey.unwrap(rewrapped, passphrase: "second")
        #expect(
            try SealedText.open(
                text, itemID: UUID(uuidString: "00000000-0000-0000-0000-000000000001") ?? UUID(), field: "text",
                key: again) == "dear diary")
        #expect(throws: VaultError.wrongPassphrase) { try VaultKey.unwrap(rewrapped, passphrase: "first") }
        #expect(throws: VaultError.wrongPassphrase) { try VaultKey.unwrap(wrapped, passphrase: "wrong") }
    }

    @Test func malformedWrappedKeys() throws {
        let wrapped = Array(try VaultKey.generate().wrapped(passphrase: "pw", parameters: .testing))
        #expect(throws: VaultError.self) { try VaultKey.unwrap(wrapped.dropLast(), passphrase: "pw") }
        var hostile = wrapped
        hostile[5] = 40
        #expect(throws: VaultError.self) { try VaultKey.unwrap(hostile, passphrase: "pw") }
        var altered = wrapped
        altered[20] ^= 1
        #expect(throws: VaultError.wrongPassphrase) { try VaultKey.unwrap(altered, passphrase: "pw") }
    }

    @Test func textIsBoundToItemAndField() throws {
        let key = VaultKey.generate()
        let item = UUID()
        let sealed = try SealedText.seal("secret", itemID: item, field: "text", key: key)
        #expect(try SealedText.open(sealed, itemID: item, field: "text", key: key) == "secret")
        #expect(throws: VaultError.self) { try SealedText.open(sealed, itemID: UUID(), field: "text", key: key) }
        #expect(throws: VaultError.self) { try SealedText.open(sealed, itemID: item, field: "title", key: key) }
    }
}
