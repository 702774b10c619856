import ConfidantCrypto
import Crypto
import Foundation
import Testing

@testable import CipherLab

@Suite struct KeystreamReuseTests {
    func conversationKey() throws -> String {
        try SeedChat.keyString(
            privateKey: P256.KeyAgreement.PrivateKey(), peerPublicKey: P256.KeyAgreement.PrivateKey().publicKey)
    }

    @Test func recoversA1KiBMessageExactly() throws {
        let key = try conversationKey()
        var generator = SystemRandomNumberGenerator()
        let known = (0..<1024).map { _ in UInt8.random(in: 0x20...0x7E, using: &generator) }
        let secret = (0..<1024).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let c1 = try SeedChat.crypt(known, keyString: key)
        let c2 = try SeedChat.crypt(secret, keyString: key)
        #expect(KeystreamReuse.recover(known: known, ciphertext: c1, other: c2) == secret)
    }

    @Test func recoveryStopsAtTheShortestInput() {
        #expect(KeystreamReuse.recover(known: [1, 2], ciphertext: [3, 4, 5], other: [6, 7, 8]).count == 2)
    }

    @Test func cribDraggingRevealsTrueFragmentsInEnglishAndRussian() throws {
        let key = try conversationKey()
        let m1 = "Meet me at the station at nine and bring the documents with you, we will have little time."
        let m2 = "The password for the archive is tulip; change it after the meeting and tell nobody about it."
        let fragments = KeystreamReuse.dragCribs(
            try SeedChat.crypt(Array(m1.utf8), keyString: key), try SeedChat.crypt(Array(m2.utf8), keyString: key))
        // A fragment is true when it is what the other message really holds at that offset.
        func isTrue(_ f: KeystreamReuse.Fragment) -> Bool {
            let window = { (m: String) in
                String(decoding: Array(m.utf8)[f.offset..<(f.offset + f.crib.utf8.count)], as: UTF8.self)
            }
            return (window(m1) == f.crib && window(m2) == f.revealed)
                || (window(m2) == f.crib && window(m1) == f.revealed)
        }
        #expect(fragments.contains(where: isTrue))

        let r1 = "Привет, завтра встреча в девять, что скажешь?"
        let r2 = "Это всё, что я знаю о встрече; не говори никому."
        let russian = KeystreamReuse.dragCribs(
            try SeedChat.crypt(Array(r1.utf8), keyString: key), try SeedChat.crypt(Array(r2.utf8), keyString: key))
        #expect(
            russian.contains { f in
                let a = Array(r1.utf8)
                let b = Array(r2.utf8)
                let range = f.offset..<(f.offset + f.crib.utf8.count)
                return range.upperBound <= min(a.count, b.count)
                    && ((String(decoding: a[range], as: UTF8.self) == f.crib
                        && String(decoding: b[range], as: UTF8.self) == f.revealed)
                        || (String(decoding: b[range], as: UTF8.self) == f.crib
                            && String(decoding: a[range], as: UTF8.self) == f.revealed))
            })
    }

    @Test func aeadEnvelopesShareNoKeystream() throws {
        // Two v1 envelopes of the same text between the same devices: XORing them reveals nothing.
        let alice = try PrivateIdentity.generate()
        let bob = try PrivateIdentity.generate()
        let text = Array(String(repeating: "the same text ", count: 8).utf8)
        let e1 = try SealedEnvelope.seal(
            text, from: alice, senderUserID: UUID(), to: bob.publicIdentity, recipientUserID: UUID())
        let e2 = try SealedEnvelope.seal(
            text, from: alice, senderUserID: UUID(), to: bob.publicIdentity, recipientUserID: UUID())
        #expect(e1.ciphertext != e2.ciphertext)
        let recovered = KeystreamReuse.recover(
            known: text, ciphertext: Array(e1.ciphertext), other: Array(e2.ciphertext))
        #expect(recovered != Array(text.prefix(recovered.count)))
    }
}

@Suite struct LabTests {
    @Test func thesisExperimentMatchesFigure241() throws {
        #expect(try ThesisExperiment().rows.map(\.ciphertext) == [44, 188, 89])
    }

    @Test func controlsPassAndJudgingWorks() throws {
        var configuration = LabConfiguration()
        configuration.keys = 60
        configuration.bytesPerKey = 2048
        configuration.biasKeys = 1024
        configuration.avalancheKeys = 1
        configuration.avalancheLength = 64
        let analysis = try AlgorithmAnalysis.run(.aesCTR, configuration: configuration)
        let monobit = try #require(analysis.battery.verdict(for: .frequency))
        #expect(monobit.total == 60)
        #expect(monobit.uniformityJudged)
        #expect(monobit.proportion >= 0.9)
        // Over all tests about 99 % of a good generator's P-values are at least α = 0.01. (Single
        // verdicts may miss NIST's 3-sigma band by chance, and correlated tests miss it together.)
        let all = NISTTest.allCases.flatMap { analysis.battery.pValues[$0] ?? [] }
        #expect(all.count > 400)
        #expect(Double(all.filter { $0 >= NISTBattery.alpha }.count) / Double(all.count) >= 0.97)
        #expect(abs(analysis.avalanche.overall - 0.5) < 0.02)
    }

    @Test func batteryFailsAnObviouslyBadGenerator() {
        // Bytes with their top and bottom bits forced to 1: 62.5 % ones, so monobit must fail.
        var generator = SystemRandomNumberGenerator()
        var biased = NISTBattery()
        for _ in 0..<60 {
            var bytes = [UInt8](repeating: 0, count: 2_500)
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) | 0b1000_0001 }
            biased.add(BitSequence(bytes: bytes))
        }
        let verdict = biased.verdict(for: .frequency)
        #expect(verdict?.passes == false)
        #expect((verdict?.proportion ?? 1) < 0.5)
    }

    @Test func reportIsWrittenWithChartsAndVerdicts() throws {
        var configuration = LabConfiguration()
        configuration.keys = 3
        configuration.bytesPerKey = 1024
        configuration.biasKeys = 512
        configuration.avalancheKeys = 1
        configuration.avalancheLength = 32
        let analyses = try KeystreamAlgorithm.allCases.map {
            try AlgorithmAnalysis.run($0, configuration: configuration)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cipher-lab-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try LabReport(configuration: configuration, analyses: analyses, command: "test").write(to: directory)
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains("| Frequency (monobit) |"))
        #expect(text.contains("S-block (seed 000)"))
        #expect(text.contains("— correct"))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.contains("avalanche.svg"))
        #expect(files.contains("bytes-sblock.svg"))
        let svg = try String(contentsOf: directory.appendingPathComponent("avalanche.svg"), encoding: .utf8)
        #expect(svg.hasPrefix("<svg"))
        #expect(svg.contains("<polyline"))
    }
}
