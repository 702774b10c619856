/// Comparison of secrets whose time does not depend on where they differ.
public enum ConstantTime {
    public static func equal<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        // Compare against the longer length so a length mismatch costs the same time.
        let left = Array(a)
        let right = Array(b)
        for index in 0..<max(left.count, right.count) {
            difference |= (index < left.count ? left[index] : 0) ^ (index < right.count ? right[index] : 0)
        }
        return difference == 0 && left.count == right.count
    }
}
