import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

@Suite struct IdentityTests {
    @Test func serializedRoundTrip() throws {
        let identity = try PrivateIdentity.generate()
        let bytes = identity.publicIdentity.serialized
        #expect(bytes.count == PublicIdentity.serializedCount)
        let parsed = try PublicIdentity(serialized: bytes)
        #expect(parsed == identity.publicIdentity)
        #expect(parsed.deviceID == identity.deviceID)
        #expect(parsed.agreementKey.rawRepresentation == identity.agreementKey.publicKey.rawRepresentation)
    }

    @Test func pemRoundTrip() throws {
        let identity = try PrivateIdentity.generate().publicIdentity
        let pem = identity.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN CONFIDANT PUBLIC IDENTITY-----"))
        #expect(try PublicIdentity(pemRepresentation: pem) == identity)
    }

    @Test func p256PublicKeyPEMIsStandardSPKI() throws {
        let identity = try PrivateIdentity.generate().publicIdentity
        let pem = identity.agreementKey.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        let parsed = try P256.KeyAgreement.PublicKey(pemRepresentation: pem)
        #expect(parsed.rawRepresentation == identity.agreementKey.rawRepresentation)
    }

    @Test func swappedAgreementKeyIsDetected() throws {
        let victim = try PrivateIdentity.generate().publicIdentity
        let attacker = try PrivateIdentity.generate().publicIdentity
        var bytes = Array(victim.serialized)
        // Replace the P-256 key (offset 49, 65 bytes) with the attacker's.
        bytes.replaceSubrange(49..<114, with: attacker.agreementKey.x963Representation)
        #expect(throws: KeyFormatError.badIdentitySignature) { try PublicIdentity(serialized: bytes) }
    }

    @Test func everyFlippedByteIsRejected() throws {
        let bytes = Array(try PrivateIdentity.generate().publicIdentity.serialized)
        // Sample positions across every field, including the signature.
        for position in stride(from: 1, to: bytes.count, by: 37) + [bytes.count - 1] {
            var tampered = bytes
            tampered[position] ^= 0x01
            #expect(throws: KeyFormatError.self) { try PublicIdentity(serialized: tampered) }
        }
    }

    @Test func malformedIdentities() throws {
        let bytes = Array(try PrivateIdentity.generate().publicIdentity.serialized)
        #expect(throws: KeyFormatError.wrongLength(expected: PublicIdentity.serializedCount, actual: 0)) {
            try PublicIdentity(serialized: [UInt8]())
        }
        #expect(throws: KeyFormatError.wrongLength(expected: PublicIdentity.serializedCount, actual: 100)) {
            try PublicIdentity(serialized: bytes.prefix(100))
        }
        var future = bytes
        future[0] = 9
        #expect(throws: KeyFormatError.unsupportedVersion(9)) { try PublicIdentity(serialized: future) }
        #expect(throws: KeyFormatError.self) { try PublicIdentity(pemRepresentation: "hello") }
        let wrongLabel = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"
        #expect(throws: KeyFormatError.invalidPEM("label is \"PUBLIC KEY\", expected \"CONFIDANT PUBLIC IDENTITY\"")) {
            try PublicIdentity(pemRepresentation: wrongLabel)
        }
    }
}

@Suite struct KeyFileTests {
    @Test func scryptRFC7914Vector() throws {
        // RFC 7914 §12, second vector; PBKDF2 output blocks are independent, so our 32-byte key is its prefix.
        // p = 16 is past what readers accept; the vector is checked through the unchecked initializer.
        let parameters = ScryptParameters(uncheckedLog2N: 10, r: 8, p: 16)
        let key = try parameters.deriveKey(passphrase: "password", salt: Array("NaCl".utf8))
        #expect(
            key.withUnsafeBytes { Array($0) } == hex("fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162")
        )
    }

    @Test("a key file asking for more than 1 GiB of scrypt work is refused before any is done")
    func hostileScryptParameters() throws {
        let file = Array(
            try IdentityKeyFile.seal(try PrivateIdentity.generate(), passphrase: "pw", parameters: .testing))
        // log2 N = 22 (4 GiB at r = 8), r = 32, p = 16: each alone is refused.
        for (offset, bytes) in [(9, [UInt8(22)]), (10, [0, 0, 0, 32]), (14, [0, 0, 0, 16])] {
            var hostile = file
            hostile.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            #expect(throws: (any Error).self) { try IdentityKeyFile.open(Data(hostile), passphrase: "pw") }
            do {
                _ = try IdentityKeyFile.open(Data(hostile), passphrase: "pw")
            } catch let error as IdentityKeyFileError {
                #expect("\(error)".contains("scrypt") || "\(error)".contains("parameters"), "\(error)")
            } catch {
                #expect(error is ScryptParametersError, "\(error)")
            }
        }
        for log2N: UInt8 in [21, 22] {
            #expect(throws: ScryptParametersError.self) { try ScryptParameters(log2N: log2N, r: 8, p: 1) }
        }
        #expect(throws: ScryptParametersError.self) { try ScryptParameters(log2N: 17, r: 9, p: 1) }
        #expect(throws: ScryptParametersError.self) { try ScryptParameters(log2N: 17, r: 8, p: 5) }
        #expect(try ScryptParameters(log2N: 20, r: 8, p: 4).log2N == 20)
    }

    @Test func sealOpenRoundTrip() throws {
        let identity = try PrivateIdentity.generate()
        let file = try IdentityKeyFile.seal(identity, passphrase: "correct horse", parameters: .testing)
        let opened = try IdentityKeyFile.open(file, passphrase: "correct horse")
        #expect(opened.publicIdentity == identity.publicIdentity)
        #expect(opened.xwingKey.seedRepresentation == identity.xwingKey.seedRepresentation)
    }

    @Test func wrongPassphrase() throws {
        let file = try IdentityKeyFile.seal(try PrivateIdentity.generate(), passphrase: "right", parameters: .testing)
        #expect(throws: IdentityKeyFileError.wrongPassphraseOrCorrupted) {
            try IdentityKeyFile.open(file, passphrase: "wrong")
        }
    }

    @Test func tamperedHeaderOrBodyIsDetected() throws {
        let file = Array(
            try IdentityKeyFile.seal(try PrivateIdentity.generate(), passphrase: "pw", parameters: .testing))
        for position in [20, 40, 50, file.count - 1] {  // salt, nonce, ciphertext, tag
            var tampered = file
            tampered[position] ^= 0x80
            #expect(throws: IdentityKeyFileError.wrongPassphraseOrCorrupted) {
                try IdentityKeyFile.open(tampered, passphrase: "pw")
            }
        }
    }

    @Test func malformedFiles() throws {
        let file = Array(
            try IdentityKeyFile.seal(try PrivateIdentity.generate(), passphrase: "pw", parameters: .testing))
        #expect(throws: IdentityKeyFileError.notAKeyFile) {
            try IdentityKeyFile.open(Array("hello world".utf8), passphrase: "pw")
        }
        #expect(throws: IdentityKeyFileError.truncated(expected: file.count, actual: file.count - 1)) {
            try IdentityKeyFile.open(file.dropLast(), passphrase: "pw")
        }
        var future = file
        future[7] = 2
        #expect(throws: IdentityKeyFileError.unsupportedVersion(2)) {
            try IdentityKeyFile.open(future, passphrase: "pw")
        }
        var greedy = file
        greedy[9] = 40  // log2 N = 40: a hostile file asking for terabytes
        #expect(throws: IdentityKeyFileError.self) { try IdentityKeyFile.open(greedy, passphrase: "pw") }
        var otherKDF = file
        otherKDF[8] = 7
        #expect(throws: IdentityKeyFileError.unsupportedKDF(7)) { try IdentityKeyFile.open(otherKDF, passphrase: "pw") }
    }

    @Test func writesMode0600AndNeverOverwrites() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("confidant-keyfile-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("device.key")
        let identity = try PrivateIdentity.generate()
        try IdentityKeyFile.write(identity, to: url, passphrase: "pw", parameters: .testing)
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(throws: PrivateFileError.exists(path: url.path)) {
            try IdentityKeyFile.write(try PrivateIdentity.generate(), to: url, passphrase: "pw", parameters: .testing)
        }
        #expect(try IdentityKeyFile.read(from: url, passphrase: "pw").publicIdentity == identity.publicIdentity)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(leftovers == ["device.key"])
    }
}

@Suite struct SafetyNumberTests {
    static func identity(signingSeed: UInt8, device: ClosedRange<UInt8>) throws -> PublicIdentity {
        let d = Array(device)
        let deviceID = UUID(
            uuid: (d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15])
        )
        return try PrivateIdentity(
            deviceID: deviceID, signingKey: .init(rawRepresentation: [UInt8](repeating: signingSeed, count: 32)),
            agreementKey: .init(), x25519Key: .init(), xwingKey: XWingMLKEM768X25519.PrivateKey.generate()
        ).publicIdentity
    }

    @Test func knownAnswerFromIndependentImplementation() throws {
        // Computed with Python (cryptography + hashlib) from the algorithm in docs/PROTOCOL.md.
        let a = try Self.identity(signingSeed: 1, device: 0...15)
        let b = try Self.identity(signingSeed: 2, device: 16...31)
        let number = SafetyNumber(a, b)
        #expect(number.digits == "276464201674334504790190298747989389446794811017838838842459")
        #expect(number.grouped.split(separator: " ").count == 12)
    }

    @Test func sameOnBothSidesAndDistinct() throws {
        let a = try PrivateIdentity.generate().publicIdentity
        let b = try PrivateIdentity.generate().publicIdentity
        let c = try PrivateIdentity.generate().publicIdentity
        #expect(SafetyNumber(a, b) == SafetyNumber(b, a))
        #expect(SafetyNumber(a, b).digits.count == 60)
        let digits = SafetyNumber(a, b).digits
        #expect(digits.allSatisfy { $0.isNumber })
        #expect(SafetyNumber(a, b) != SafetyNumber(a, c))
    }

    @Test func fingerprintFormat() throws {
        let a = try PrivateIdentity.generate().publicIdentity
        let fingerprint = IdentityFingerprint(a).description
        #expect(fingerprint.count == 39)
        #expect(fingerprint.split(separator: " ").allSatisfy { $0.count == 4 })
        #expect(IdentityFingerprint(a) == IdentityFingerprint(try PublicIdentity(serialized: a.serialized)))
        // The first 16 bytes of SHA-256 over the serialized identity, as hex in groups of four.
        let hex = SHA256.hash(data: a.serialized).prefix(16).map { String(format: "%02x", $0) }.joined()
        let groups = stride(from: 0, to: 32, by: 4).map { offset in
            String(hex.dropFirst(offset).prefix(4))
        }
        #expect(fingerprint == groups.joined(separator: " "))
    }

    @Test("the serialized bytes kept are the bytes parsed, and the bytes built from the keys")
    func serializedKept() throws {
        let identity = try PrivateIdentity.generate().publicIdentity
        let parsed = try PublicIdentity(serialized: identity.serialized)
        #expect(parsed.serialized == identity.serialized)
        #expect(
            identity.serialized
                == Data(
                    PublicIdentity.signedBytes(
                        deviceID: identity.deviceID, signingKey: identity.signingKey,
                        agreementKey: identity.agreementKey, x25519Key: identity.x25519Key,
                        xwingKey: identity.xwingKey)) + identity.signature)
        #expect(identity.serialized.count == PublicIdentity.serializedCount)
        #expect(Set([identity, parsed]).count == 1)
    }
}
