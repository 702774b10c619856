import Benchmark
import CipherLab
import ConfidantCrypto
import Crypto
import Foundation

/// The seed's `Cipher` class as the thesis wrote it (Int S-block, `append` per byte, a method
/// call and a `%` per byte), with only the `i = n mod 256` fix: the naive reference our
/// in-place, table-driven implementation is compared with.
final class SeedStyleCipher {
    var SBlock: [Int] = Array(repeating: 0, count: 256)

    func encryptDecrypt(data: [UInt8], key: [UInt8]) -> [UInt8] {
        var outputBytes: [UInt8] = []
        generationSBlock(key: key)
        var indexForSwapKey2 = 0
        for index in 0..<data.count {
            outputBytes.append(data[index] ^ getKey(indexForSwapKey1: index % 256, indexForSwapKey2: &indexForSwapKey2))
        }
        return outputBytes
    }

    private func generationSBlock(key: [UInt8]) {
        for i in 0..<256 { SBlock[i] = i }
        var j = 0
        for i in 0..<256 {
            j = ((SBlock.count - j) + SBlock[i] + Int(key[i % key.count])) % SBlock.count
            swap(i: i, j: j)
        }
    }

    private func swap(i: Int, j: Int) {
        let tmp = SBlock[i]
        SBlock[i] = SBlock[j]
        SBlock[j] = tmp
    }

    private func getKey(indexForSwapKey1: Int, indexForSwapKey2: inout Int) -> UInt8 {
        indexForSwapKey2 = (SBlock[indexForSwapKey1] + SBlock.count % (indexForSwapKey2 + 1)) % SBlock.count
        swap(i: indexForSwapKey1, j: indexForSwapKey2)
        return UInt8(SBlock[(SBlock[indexForSwapKey1] + SBlock[indexForSwapKey2]) % SBlock.count])
    }
}

let mebibyte = 1 << 20

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        maxDuration: .seconds(3), maxIterations: 10_000)

    let megabyte = [UInt8](repeating: 0x5A, count: mebibyte)
    let key = Array("6wRB7UxXHt33Ks0fF+CK0KEscmfuFF50l6gRmYncGgM=".utf8)

    for (label, size) in [("16 KiB", 16_384), ("1 MiB", mebibyte)] {
        let input = [UInt8](repeating: 0x5A, count: size)
        Benchmark("S-block \(label) (in place)") { benchmark in
            var buffer = input
            for _ in benchmark.scaledIterations {
                var cipher = try SBlockCipher(key: key)
                cipher.apply(to: &buffer)
            }
            blackHole(buffer)
        }

        Benchmark("S-block \(label) (seed-style reference)") { benchmark in
            let cipher = SeedStyleCipher()
            for _ in benchmark.scaledIterations {
                blackHole(cipher.encryptDecrypt(data: input, key: key))
            }
        }
    }

    let aesKey = SymmetricKey(size: .bits256)
    let sixteenKiB = [UInt8](repeating: 0x5A, count: 16_384)
    Benchmark("AES-256-GCM seal 16 KiB (swift-crypto)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try AES.GCM.seal(sixteenKiB, using: aesKey))
        }
    }

    // The nonce as the vault's segments and `openssl speed` have it: not drawn from the system's
    // random source on every call (a system call, about a tenth of a 16 KiB seal here).
    Benchmark("AES-256-GCM seal 16 KiB, counter nonce (swift-crypto)") { benchmark in
        var counter: UInt64 = 0
        for _ in benchmark.scaledIterations {
            counter += 1
            var nonce = Data(count: 12)
            nonce.withUnsafeMutableBytes { $0.storeBytes(of: counter.bigEndian, toByteOffset: 4, as: UInt64.self) }
            blackHole(try AES.GCM.seal(sixteenKiB, using: aesKey, nonce: try AES.GCM.Nonce(data: nonce)))
        }
    }

    Benchmark("AES-256-GCM seal 1 MiB (swift-crypto)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try AES.GCM.seal(megabyte, using: aesKey))
        }
    }

    Benchmark("ChaCha20-Poly1305 seal 1 MiB (swift-crypto)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try ChaChaPoly.seal(megabyte, using: aesKey))
        }
    }

    guard let alice = try? PrivateIdentity.generate(), let bob = try? PrivateIdentity.generate() else { return }
    let kibibyte = [UInt8](repeating: 0x41, count: 1024)
    let aliceUser = UUID()
    let bobUser = UUID()
    for suite in EnvelopeSuite.allCases {
        Benchmark("envelope seal+open 1 KiB \(suite.name)", configuration: .init(metrics: [.wallClock, .throughput])) {
            benchmark in
            for _ in benchmark.scaledIterations {
                let envelope = try SealedEnvelope.seal(
                    kibibyte, from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser,
                    suite: suite)
                blackHole(try envelope.open(as: bob, recipientUserID: bobUser, from: alice.publicIdentity))
            }
        }
    }

    // What the messenger sent before v2: a signed P-256 envelope per message.
    Benchmark(
        "envelope seal+open 1 KiB p256-aesgcm signed (v1 as the messenger sends it)",
        configuration: .init(metrics: [.wallClock, .throughput])
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            let envelope = try SealedEnvelope.seal(
                kibibyte, from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser,
                signed: true)
            blackHole(try envelope.open(as: bob, recipientUserID: bobUser, from: alice.publicIdentity))
        }
    }

    // Envelope v2 (docs/PROTOCOL.md §9): sessions.
    guard let bobPrekeys = try? DevicePrekeys.generate(),
        let upload = try? bobPrekeys.upload(signedBy: bob, oneTimePrekeys: bobPrekeys.allOneTimePrekeys)
    else { return }
    let bundle = PrekeyBundle(
        deviceID: bob.deviceID, signedPrekey: upload.signedPrekey, kemPrekey: upload.kemPrekey,
        oneTimePrekey: upload.oneTimePrekeys.first)
    Benchmark(
        "v2 session start + first 1 KiB message (bundle check, PQXDH with X-Wing both sides)",
        configuration: .init(metrics: [.wallClock, .throughput])
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            var prekeys = bobPrekeys
            var sender = SessionRecord()
            var receiver = SessionRecord()
            try sender.start(from: alice, to: bob.publicIdentity, bundle: bundle)
            let envelope = try sender.seal(
                kibibyte, from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser)
            blackHole(
                try receiver.open(
                    envelope, as: bob, recipientUserID: bobUser, from: alice.publicIdentity, prekeys: &prekeys))
        }
    }

    /// An established session: Alice started it and Bob answered once.
    func establishedSession() throws -> (SessionRecord, SessionRecord, DevicePrekeys) {
        var prekeys = bobPrekeys
        var sender = SessionRecord()
        var receiver = SessionRecord()
        try sender.start(from: alice, to: bob.publicIdentity, bundle: bundle)
        _ = try receiver.open(
            try sender.seal(
                kibibyte, from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser),
            as: bob, recipientUserID: bobUser, from: alice.publicIdentity, prekeys: &prekeys)
        _ = try sender.open(
            try receiver.seal(
                kibibyte, from: bob, senderUserID: bobUser, to: alice.publicIdentity, recipientUserID: aliceUser),
            as: alice, recipientUserID: aliceUser, from: bob.publicIdentity, prekeys: &prekeys)
        return (sender, receiver, prekeys)
    }

    // 1,000 messages per sample, so setting up the session (excluded anyway) is not what is measured.
    Benchmark(
        "v2 ratchet seal+open 1 KiB, same direction (symmetric ratchet)",
        configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .kilo)
    ) { benchmark in
        var (sender, receiver, prekeys) = try establishedSession()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let envelope = try sender.seal(
                kibibyte, from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser)
            blackHole(
                try receiver.open(
                    envelope, as: bob, recipientUserID: bobUser, from: alice.publicIdentity, prekeys: &prekeys))
        }
        benchmark.stopMeasurement()
    }

    Benchmark(
        "v2 ratchet seal+open 1 KiB, alternating (a DH ratchet step every message)",
        configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .kilo)
    ) { benchmark in
        var (alicesSide, bobsSide, prekeys) = try establishedSession()
        var aliceTurn = true
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            if aliceTurn {
                let envelope = try alicesSide.seal(
                    kibibyte, from: alice, senderUserID: aliceUser, to: bob.publicIdentity, recipientUserID: bobUser)
                blackHole(
                    try bobsSide.open(
                        envelope, as: bob, recipientUserID: bobUser, from: alice.publicIdentity, prekeys: &prekeys))
            } else {
                let envelope = try bobsSide.seal(
                    kibibyte, from: bob, senderUserID: bobUser, to: alice.publicIdentity, recipientUserID: aliceUser)
                blackHole(
                    try alicesSide.open(
                        envelope, as: alice, recipientUserID: aliceUser, from: bob.publicIdentity, prekeys: &prekeys))
            }
            aliceTurn.toggle()
        }
        benchmark.stopMeasurement()
    }

    Benchmark("safety number", configuration: .init(metrics: [.wallClock, .throughput])) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(SafetyNumber(alice.publicIdentity, bob.publicIdentity))
        }
    }

    // The cipher lab's NIST battery over 10 MiB of keystream (80 keys × 128 KiB), per algorithm:
    // the issue asks for under a minute each on this machine.
    for algorithm in KeystreamAlgorithm.allCases {
        Benchmark(
            "NIST battery 10 MiB \(algorithm.rawValue)",
            configuration: .init(metrics: [.wallClock, .peakMemoryResident], maxIterations: 2)
        ) { benchmark in
            var configuration = LabConfiguration()
            configuration.algorithms = [algorithm]
            configuration.biasKeys = 256
            configuration.avalancheKeys = 1
            for _ in benchmark.scaledIterations {
                blackHole(try AlgorithmAnalysis.run(algorithm, configuration: configuration))
            }
        }
    }

    Benchmark(
        "key file open (scrypt N=2^17, r=8, p=1)",
        configuration: .init(metrics: [.wallClock, .peakMemoryResident], maxIterations: 5)
    ) { benchmark in
        let file = try IdentityKeyFile.seal(alice, passphrase: "benchmark", parameters: .interactive)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try IdentityKeyFile.open(file, passphrase: "benchmark"))
        }
    }
}
