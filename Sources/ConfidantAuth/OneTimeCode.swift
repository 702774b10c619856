import Foundation

/// One-time codes sent by e-mail: 4–8 characters from an alphabet without look-alikes
/// (no 0/O, 1/I/L, 5/S, 2/Z, 8/B), compared in constant time and case-insensitively.
public enum OneTimeCode {
    public static let alphabet = Array("34679ACDEFGHJKMNPQRTUVWXY")
    public static let lengths: ClosedRange<Int> = 4...8

    public static func generate<R: RandomNumberGenerator>(length: Int, using generator: inout R) throws(AuthError)
        -> String
    {
        guard lengths.contains(length) else { throw AuthError.invalidCodeLength(length) }
        return String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
    }

    public static func generate(length: Int) throws(AuthError) -> String {
        var generator = SystemRandomNumberGenerator()
        return try generate(length: length, using: &generator)
    }

    /// True when `entered` is `expected`, ignoring case and spaces.
    public static func matches(_ entered: String, _ expected: String) -> Bool {
        let normalized = entered.uppercased().filter { !$0.isWhitespace }
        return ConstantTime.equal(Array(normalized.utf8), Array(expected.utf8))
    }

    /// log2 of the number of codes of a length: the guessing work per attempt.
    public static func entropyBits(length: Int) -> Double {
        Double(length) * log2(Double(alphabet.count))
    }
}
