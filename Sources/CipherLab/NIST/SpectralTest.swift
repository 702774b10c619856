import Foundation

/// SP 800-22 §2.6 Discrete Fourier transform (spectral) test: periodic features.
public enum SpectralTest {
    public static func pValue(_ s: BitSequence) -> Double {
        let n = s.count
        let x = s.bits.map { Double(Int($0) * 2 - 1) }
        let magnitudes = FourierTransform.magnitudes(x)
        let threshold = (log(1 / 0.05) * Double(n)).squareRoot()
        let expected = 0.95 * Double(n) / 2
        let observed = Double(magnitudes.prefix(n / 2).filter { $0 < threshold }.count)
        let d = (observed - expected) / (Double(n) * 0.95 * 0.05 / 4).squareRoot()
        return erfc(abs(d) / 2.0.squareRoot())
    }
}
