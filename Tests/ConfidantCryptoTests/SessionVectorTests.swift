import Crypto
import Foundation
import Testing

@testable import ConfidantCrypto

/// Known answers for the v2 handshake and ratchet, from fixed keys and fixed randomness.
///
/// Bob's X-Wing prekey and Alice's encapsulation are the first test vector of
/// draft-connolly-cfrg-xwing-kem-06 (Appendix C), so the KEM part is pinned by the draft itself;
/// everything else comes from the fixed bytes below and is recomputed independently by
/// Tests/Interop/session_kat.py.
@Suite struct SessionVectorTests {
    static let xwingSeed = "7f9c2ba4e88f827d616045507605853ed73b8093f6efbc88eb1a6eacfa66ef26"
    static let xwingPublicKeySHA256 = "2e816deebcd76c5c80d0cd2d174478871658e8e2ff42bc9d4a6e486372e856bb"
    static let xwingSharedSecret = "d2df0522128f09dd8e2c92b1e905c793d8f57a54c3da25861f10bf4ca613e384"
    static let xwingCiphertext = [
        "b83aa828d4d62b9a83ceffe1d3d3bb1ef31264643c070c5798927e41fb07914a273f8f96e7826cd5375a283d7da885304c5de0516a0f0654243dc5b97f8bfeb8",
        "31f68251219aabdd723bc6512041acbaef8af44265524942b902e68ffd23221cda70b1b55d776a92d1143ea3a0c475f63ee6890157c7116dae3f62bf72f60acd",
        "2bb8cc31ce2ba0de364f52b8ed38c79d719715963a5dd3842d8e8b43ab704e4759b5327bf027c63c8fa857c4908d5a8a7b88ac7f2be394d93c3706ddd4e698cc",
        "6ce370101f4d0213254238b4a2e8821b6e414a1cf20f6c1244b699046f5a01caa0a1a55516300b40d2048c77cc73afba79afeea9d2c0118bdf2adb8870dc328c",
        "5516cc45b1a2058141039e2c90a110a9e16b318dfb53bd49a126d6b73f215787517b8917cc01cabd107d06859854ee8b4f9861c226d3764c87339ab16c3667d2",
        "f49384e55456dd40414b70a6af841585f4c90c68725d57704ee8ee7ce6e2f9be582dbee985e038ffc346ebfb4e22158b6c84374a9ab4a44e1f91de5aac5197f8",
        "9bc5e5442f51f9a5937b102ba3beaebf6e1c58380a4a5fedce4a4e5026f88f528f59ffd2db41752b3a3d90efabe463899b7d40870c530c8841e8712b733668ed",
        "033adbfafb2d49d37a44d4064e5863eb0af0a08d47b3cc888373bc05f7a33b841bc2587c57eb69554e8a3767b7506917b6b70498727f16eac1a36ec8d8cfaf75",
        "1549f2277db277e8a55a9a5106b23a0206b4721fa9b3048552c5bd5b594d6e247f38c18c591aea7f56249c72ce7b117afcc3a8621582f9cf71787e183dee0936",
        "7976e98409ad9217a497df888042384d7707a6b78f5f7fb8409e3b535175373461b776002d799cbad62860be70573ecbe13b246e0da7e93a52168e0fb6a9756b",
        "895ef7f0147a0dc81bfa644b088a9228160c0f9acf1379a2941cd28c06ebc80e44e17aa2f8177010afd78a97ce0868d1629ebb294c5151812c583daeb8868522",
        "0f4da9118112e07041fcc24d5564a99fdbde28869fe0722387d7a9a4d16e1cc8555917e09944aa5ebaaaec2cf62693afad42a3f518fce67d273cc6c9fb5472b3",
        "80e8573ec7de06a3ba2fd5f931d725b493026cb0acbd3fe62d00e4c790d965d7a03a3c0b4222ba8c2a9a16e2ac658f572ae0e746eafc4feba023576f08942278",
        "a041fb82a70a595d5bacbf297ce2029898a71e5c3b0d1c6228b485b1ade509b35fbca7eca97b2132e7cb6bc465375146b7dceac969308ac0c2ac89e7863eb894",
        "3015b24314cafb9c7c0e85fe543d56658c213632599efabfc1ec49dd8c88547bb2cc40c9d38cbd3099b4547840560531d0188cd1e9c23a0ebee0a03d5577d66b",
        "1d2bcb4baaf21cc7fef1e03806ca96299df0dfbc56e1b2b43e4fc20c37f834c4af62127e7dae86c3c25a2f696ac8b589dec71d595bfbe94b5ed4bc07d800b330",
        "796fda89edb77be0294136139354eb8cd37591578f9c600dd9be8ec6219fdd507adf3397ed4d68707b8d13b24ce4cd8fb22851bfe9d632407f31ed6f7cb1600d",
        "e56f17576740ce2a32fc5145030145cfb97e63e0e41d354274a079d3e6fb2e15",
    ].joined()

    static func identity(_ fill: UInt8, device: String) throws -> PrivateIdentity {
        try PrivateIdentity(
            deviceID: UUID(uuidString: device) ?? UUID(),
            signingKey: .init(rawRepresentation: [UInt8](repeating: fill, count: 32)),
            agreementKey: .init(rawRepresentation: [UInt8](repeating: fill + 1, count: 32)),
            x25519Key: .init(rawRepresentation: [UInt8](repeating: fill + 2, count: 32)),
            xwingKey: .init(seedRepresentation: [UInt8](repeating: fill + 3, count: 32), publicKey: nil))
    }

    struct Fixture {
        let alice: PrivateIdentity, bob: PrivateIdentity
        let aliceUser = UUID(uuidString: "00000000-0000-4000-8000-00000000a11c") ?? UUID()
        let bobUser = UUID(uuidString: "00000000-0000-4000-8000-000000000b0b") ?? UUID()
        var bobPrekeys: DevicePrekeys
        let aliceEntropy: SessionEntropy, bobEntropy: SessionEntropy

        init() throws {
            alice = try SessionVectorTests.identity(0x01, device: "00000000-0000-4000-8000-0000000000a1")
            bob = try SessionVectorTests.identity(0x11, device: "00000000-0000-4000-8000-0000000000b1")
            let created = Date(timeIntervalSince1970: 1_800_000_000)
            bobPrekeys = DevicePrekeys(
                signed: [
                    .init(
                        id: 1, created: created, key: try .init(rawRepresentation: [UInt8](repeating: 0x21, count: 32)))
                ],
                kem: [
                    .init(
                        id: 2, created: created,
                        key: try .init(seedRepresentation: hex(SessionVectorTests.xwingSeed), publicKey: nil))
                ],
                oneTime: [
                    3: .init(created: created, key: try .init(rawRepresentation: [UInt8](repeating: 0x23, count: 32)))
                ],
                nextID: 4)
            aliceEntropy = .fixed(
                seed: [UInt8](repeating: 0x31, count: 32),
                encapsulation: (
                    Data(hex(SessionVectorTests.xwingCiphertext)),
                    hex(SessionVectorTests.xwingSharedSecret)
                ))
            bobEntropy = .fixed(seed: [UInt8](repeating: 0x41, count: 32), encapsulation: (Data(), []))
        }

        func bundle() throws -> PrekeyBundle {
            let upload = try bobPrekeys.upload(signedBy: bob, oneTimePrekeys: bobPrekeys.allOneTimePrekeys)
            return PrekeyBundle(
                deviceID: bob.deviceID, signedPrekey: upload.signedPrekey, kemPrekey: upload.kemPrekey,
                oneTimePrekey: upload.oneTimePrekeys.first)
        }
    }

    /// The chain and message key derivations, written out to set each HMAC key up once, give
    /// what the one-shot HMAC and `HKDF<SHA256>.deriveKey` give, for keys of every byte.
    @Test func keyDerivationsMatchTheOneShotForms() throws {
        var keys: [[UInt8]] = [[UInt8](repeating: 0, count: 32), [UInt8](repeating: 0xFF, count: 32)]
        keys += (0..<64).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255) } }
        for key in keys {
            let (messageKey, next) = ChainKey(key).step()
            let symmetric = SymmetricKey(data: key)
            #expect(messageKey.bytes == Array(HMAC<SHA256>.authenticationCode(for: [0x01], using: symmetric)))
            #expect(next.bytes == Array(HMAC<SHA256>.authenticationCode(for: [0x02], using: symmetric)))

            let expected = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: symmetric, info: MessageKey.info, outputByteCount: 44
            ).withUnsafeBytes { Array($0) }
            let (cipherKey, nonce) = try MessageKey(key).cipherKeys()
            #expect(cipherKey.withUnsafeBytes { Array($0) } == Array(expected[0..<32]))
            #expect(Array(nonce) == Array(expected[32..<44]))
        }
    }

    @Test func xwingDraftVector() throws {
        let key = try XWingMLKEM768X25519.PrivateKey(seedRepresentation: hex(Self.xwingSeed), publicKey: nil)
        #expect(SHA256.hash(data: key.publicKey.rawRepresentation).hexString == Self.xwingPublicKeySHA256)
        let secret = try key.decapsulate(Data(hex(Self.xwingCiphertext)))
        #expect(secret.withUnsafeBytes { Array($0) } == hex(Self.xwingSharedSecret))
    }

    @Test func handshakeAndRatchet() throws {
        var fixture = try Fixture()
        #expect(fixture.bobPrekeys.oneTimeCount == 1)
        var alice = SessionRecord()
        var bob = SessionRecord()
        try alice.start(
            from: fixture.alice, to: fixture.bob.publicIdentity, bundle: fixture.bundle(), entropy: fixture.aliceEntropy
        )
        let session = alice.sessions[0]
        let when = Date(timeIntervalSince1970: 1_800_000_000.25)
        let first = try alice.seal(
            Data("Hello, Bob".utf8), from: fixture.alice, senderUserID: fixture.aliceUser,
            to: fixture.bob.publicIdentity, recipientUserID: fixture.bobUser,
            messageID: UUID(uuidString: "00000000-0000-4000-8000-000000000001") ?? UUID(), timestamp: when)
        let opened = try bob.open(
            first, as: fixture.bob, recipientUserID: fixture.bobUser, from: fixture.alice.publicIdentity,
            prekeys: &fixture.bobPrekeys, entropy: fixture.bobEntropy)
        #expect(String(decoding: opened, as: UTF8.self) == "Hello, Bob")
        let reply = try bob.seal(
            Data("Hi Alice".utf8), from: fixture.bob, senderUserID: fixture.bobUser,
            to: fixture.alice.publicIdentity, recipientUserID: fixture.aliceUser,
            messageID: UUID(uuidString: "00000000-0000-4000-8000-000000000002") ?? UUID(), timestamp: when)
        #expect(
            String(
                decoding: try alice.open(
                    reply, as: fixture.alice, recipientUserID: fixture.aliceUser,
                    from: fixture.bob.publicIdentity, prekeys: &fixture.bobPrekeys,
                    entropy: fixture.aliceEntropy), as: UTF8.self) == "Hi Alice")
        #expect(session.associatedData.hexString == "448d410f53fc49a6f2b30798aa556cc79acc63450ced3a2db934ed9ef1b892fe")
        #expect(first.start?.baseKey.hexString == "a4315f5e6054812b4ad67a022ae76df9a08752db1ca300581bd149ced1763521")
        #expect(first.start?.oneTimePrekeyID == 3)
        #expect(first.ratchetKey.hexString == "dbb8b3c41cb29aef29fa5408e94bdfb24f742f19dec744e804d206d753024b6a")
        #expect(
            first.ciphertext.hexString
                == "37fe59a2396c419e6963e2b436ec4471638455d6f96ea52b45a824bb71b8cfcdcd8550fc102914852a556eebc92b2f9e")
        #expect(
            SHA256.hash(data: first.serialized).hexString
                == "15a551e59e48f0f3fb229a4291ca2497f282459ac1009c8a26679104daca58bd")
        #expect(reply.start == nil)
        #expect(reply.ratchetKey.hexString == "cfc6235d5dc6dc35c2ec53c0702d7d3a1e0678dece143e6b5a6f4f78e3859758")
        #expect(
            reply.ciphertext.hexString
                == "5ff3924a5e91d0432b63525235cc39f70dfc423a13318e0a74adfd7e1c0705ef035a8ccf8a20d30912101c97512e96dc")
        #expect(
            alice.sessions[0].rootKey.bytes.hexString
                == "522e11828c3c4103730154a066577540321e14d10aa318ac0b44a8083a1235f5")
        #expect(fixture.bobPrekeys.oneTimeCount == 0, "the one-time prekey is erased")
        try Self.checkWithPython(first: first, reply: reply, root: alice.sessions[0].rootKey.bytes, fixture: fixture)
    }

    /// Tests/Interop/session_kat.py rebuilds the same session from docs/PROTOCOL.md §9 alone.
    /// Needs python3 with `cryptography` (Tests/Interop/requirements.txt; .ci/run installs it).
    static func checkWithPython(first: RatchetEnvelope, reply: RatchetEnvelope, root: [UInt8], fixture: Fixture) throws
    {
        let vectors: [String: String] = [
            "alice_xwing": fixture.alice.xwingKey.publicKey.rawRepresentation.hexString,
            "bob_xwing": fixture.bob.xwingKey.publicKey.rawRepresentation.hexString,
            "xwing_ciphertext": xwingCiphertext,
            "first": first.serialized.hexString, "reply": reply.serialized.hexString, "root": root.hexString,
        ]
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("session-kat-\(UUID()).json")
        try JSONSerialization.data(withJSONObject: vectors).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Interop/session_kat.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, file.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("session_kat: 7 passed, 0 failed"), "\(text)")
    }
}
