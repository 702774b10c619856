import Foundation

/// Magnitudes of the discrete Fourier transform of a real ±1 sequence, as SP 800-22's spectral
/// test needs them. Radix-2 iterative FFT for power-of-two lengths; the direct O(n²) sum for
/// other (small) lengths, such as the standard's worked examples. Written here because no FFT
/// package is available to this project.
enum FourierTransform {
    static func magnitudes(_ x: [Double]) -> [Double] {
        let n = x.count
        guard n > 0 else { return [] }
        if n & (n - 1) == 0 { return fftMagnitudes(x) }
        return (0..<n).map { k in
            var re = 0.0
            var im = 0.0
            for (j, value) in x.enumerated() {
                let angle = -2 * Double.pi * Double(k) * Double(j) / Double(n)
                re += value * cos(angle)
                im += value * sin(angle)
            }
            return (re * re + im * im).squareRoot()
        }
    }

    private static func fftMagnitudes(_ x: [Double]) -> [Double] {
        let n = x.count
        var re = x
        var im = [Double](repeating: 0, count: n)
        // Bit-reversal permutation.
        var j = 0
        for i in 1..<max(n, 1) {
            var bit = n >> 1
            while j & bit != 0 {
                j ^= bit
                bit >>= 1
            }
            j |= bit
            if i < j {
                re.swapAt(i, j)
                im.swapAt(i, j)
            }
        }
        var length = 2
        while length <= n {
            let angle = -2 * Double.pi / Double(length)
            let wRe = cos(angle)
            let wIm = sin(angle)
            var start = 0
            while start < n {
                var curRe = 1.0
                var curIm = 0.0
                for k in 0..<(length / 2) {
                    let a = start + k
                    let b = a + length / 2
                    let tRe = re[b] * curRe - im[b] * curIm
                    let tIm = re[b] * curIm + im[b] * curRe
                    re[b] = re[a] - tRe
                    im[b] = im[a] - tIm
                    re[a] += tRe
                    im[a] += tIm
                    let nextRe = curRe * wRe - curIm * wIm
                    curIm = curRe * wIm + curIm * wRe
                    curRe = nextRe
                }
                start += length
            }
            length <<= 1
        }
        return (0..<n).map { (re[$0] * re[$0] + im[$0] * im[$0]).squareRoot() }
    }
}
