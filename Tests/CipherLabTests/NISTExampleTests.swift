import Foundation
import Testing

@testable import CipherLab

/// The worked examples of NIST SP 800-22 rev. 1a (sections 2.x.4 and 2.x.8); each P-value is
/// printed there to six decimals.
@Suite struct NISTExampleTests {
    /// The 100-bit sequence of the standard's second examples (the first bits of e's binary expansion).
    static let e100 = BitSequence(
        "1100100100001111110110101010001000100001011010001100001000110100110001001100011001100010100010111000")

    func close(_ value: Double?, _ expected: Double, within tolerance: Double = 0.000_001) -> Bool {
        guard let value else { return false }
        return abs(value - expected) <= tolerance
    }

    @Test func frequencyMonobit() {
        #expect(close(FrequencyTests.monobit(BitSequence("1011010101")), 0.527089))
        #expect(close(FrequencyTests.monobit(Self.e100), 0.109599))
    }

    @Test func blockFrequency() {
        #expect(close(FrequencyTests.blockFrequency(BitSequence("0110011010"), blockLength: 3), 0.801252))
        #expect(close(FrequencyTests.blockFrequency(Self.e100, blockLength: 10), 0.706438))
    }

    @Test func runs() {
        #expect(close(RunsTests.runs(BitSequence("1001101011")), 0.147232))
        #expect(close(RunsTests.runs(Self.e100), 0.500798))
    }

    @Test func longestRunOfOnes() {
        let sequence = BitSequence(
            "11001100000101010110110001001100111000000000001001001101010100010001001111010110100000001101011111001100111001101101100010110010"
        )
        // The standard prints χ² = 4.882605 and P = 0.180609; Q(3/2, 4.882605/2) is 0.180598 (scipy's
        // gammaincc agrees with us), so its sixth decimal is off: we accept ±2e-5.
        #expect(close(RunsTests.longestRun(sequence), 0.180609, within: 0.000_02))
        #expect(RunsTests.longestRun(BitSequence("0101")) == nil)
    }

    @Test func binaryMatrixRank() {
        // §2.5.4: two 3×3 matrices of ranks 2 and 3, judged (as the standard does) with the 32×32 probabilities.
        var first: [UInt64] = [0b010, 0b110, 0b010]
        var second: [UInt64] = [0b010, 0b101, 0b011]
        #expect(MatrixRankTest.rankGF2(&first, columns: 3) == 2)
        #expect(MatrixRankTest.rankGF2(&second, columns: 3) == 3)
        #expect(
            close(
                MatrixRankTest.pValue(fullRank: 1, oneLess: 1, matrices: 2, pFull: 0.2888, pOneLess: 0.5776), 0.741948))
        // The 32×32 class probabilities the standard quotes.
        #expect(abs(MatrixRankTest.probability(rank: 32, m: 32, q: 32) - 0.2888) < 0.0001)
        #expect(abs(MatrixRankTest.probability(rank: 31, m: 32, q: 32) - 0.5776) < 0.0001)
    }

    @Test func discreteFourierTransform() {
        // §2.6.4 prints N1 = 4 and P = 0.029523 for "1001010011", but the moduli of that sequence's DFT are
        // 0, 2, 4.47, 2, 4.47 (numpy agrees), all below T = 5.47, so N1 = 5 and P = erfc(0.7255/√2) = 0.468160.
        #expect(close(SpectralTest.pValue(BitSequence("1001010011")), 0.468160))
        #expect(close(SpectralTest.pValue(Self.e100), 0.646355))
    }

    @Test func fftAgreesWithDirectTransform() {
        var generator = SystemRandomNumberGenerator()
        let x = (0..<64).map { _ in Double(Int.random(in: 0...1, using: &generator) * 2 - 1) }
        let fast = FourierTransform.magnitudes(x)
        // Pad to a non-power-of-two neighbour is not comparable; compare against the direct sum by hand.
        for k in [0, 1, 5, 31, 63] {
            var re = 0.0
            var im = 0.0
            for (j, value) in x.enumerated() {
                re += value * cos(-2 * Double.pi * Double(k * j) / 64)
                im += value * sin(-2 * Double.pi * Double(k * j) / 64)
            }
            #expect(abs(fast[k] - (re * re + im * im).squareRoot()) < 1e-9)
        }
    }

    @Test func serial() {
        let (p1, p2) = SerialTests.serial(BitSequence("0011011101"), m: 3)
        #expect(close(p1, 0.808792))
        #expect(close(p2, 0.670320))
    }

    @Test func approximateEntropy() {
        #expect(close(SerialTests.approximateEntropy(BitSequence("0100110101"), m: 3), 0.261961))
        #expect(close(SerialTests.approximateEntropy(Self.e100, m: 2), 0.235301))
    }

    @Test func cumulativeSums() {
        #expect(close(CumulativeSumsTest.pValue(BitSequence("1011010111"), forward: true), 0.4116588))
        #expect(close(CumulativeSumsTest.pValue(Self.e100, forward: true), 0.219194))
        #expect(close(CumulativeSumsTest.pValue(Self.e100, forward: false), 0.114866))
    }

    @Test func incompleteGamma() {
        // Q(a, x) reference values (e.g. from scipy.special.gammaincc).
        #expect(abs(SpecialFunctions.igamc(1, 1) - exp(-1)) < 1e-12)
        #expect(abs(SpecialFunctions.igamc(0.5, 2) - erfc(2.0.squareRoot())) < 1e-12)
        #expect(abs(SpecialFunctions.igamc(127.5, 127.5) - 0.48822252) < 1e-7)
    }
}
