import Foundation

/// The special functions SP 800-22 needs. swift-numerics has no incomplete gamma function and
/// no other Swift package here does, so `igamc` is written out (Numerical Recipes §6.2: series
/// below a + 1, Lentz's continued fraction above), on top of the C library's `lgamma`/`erfc`.
enum SpecialFunctions {
    /// The regularized upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a), as NIST's `igamc`.
    static func igamc(_ a: Double, _ x: Double) -> Double {
        guard x > 0, a > 0 else { return 1 }
        if x < a + 1 { return 1 - lowerSeries(a, x) }
        return upperContinuedFraction(a, x)
    }

    private static func lowerSeries(_ a: Double, _ x: Double) -> Double {
        var sum = 1 / a
        var term = sum
        var n = a
        for _ in 0..<10_000 {
            n += 1
            term *= x / n
            sum += term
            if abs(term) < abs(sum) * 1e-15 { break }
        }
        return sum * exp(-x + a * log(x) - lgamma(a))
    }

    private static func upperContinuedFraction(_ a: Double, _ x: Double) -> Double {
        let tiny = 1e-300
        var b = x + 1 - a
        var c = 1 / tiny
        var d = 1 / b
        var h = d
        for i in 1..<10_000 {
            let an = -Double(i) * (Double(i) - a)
            b += 2
            d = an * d + b
            if abs(d) < tiny { d = tiny }
            c = b + an / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let delta = d * c
            h *= delta
            if abs(delta - 1) < 1e-15 { break }
        }
        return exp(-x + a * log(x) - lgamma(a)) * h
    }

    /// The standard normal cumulative distribution function Φ(z).
    static func normalCDF(_ z: Double) -> Double { 0.5 * erfc(-z / 2.0.squareRoot()) }
}
